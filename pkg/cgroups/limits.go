package cgroups

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodelet/nodelet/pkg/status"
)

// CPU conversions, as the kernel and upstream define them.
const (
	// MinShares is the kernel's minimum cpu.shares, what a pod without
	// CPU request and the besteffort cgroup get.
	MinShares = 2
	// MaxShares is the kernel's maximum cpu.shares.
	MaxShares = 262144
	// sharesPerCPU is cpu.shares for one CPU of request.
	sharesPerCPU = 1024
	// QuotaPeriod is the CFS period in µs (100 ms; --cpu-cfs-quota-period
	// is not supported).
	QuotaPeriod = 100000
	// minQuota is the kernel's minimum CFS quota, 1 ms.
	minQuota = 1000
)

// Limits are what a cgroup is set to; nil leaves a setting as the kernel
// made it (unlimited, or inherited).
type Limits struct {
	// CPUShares is the relative CPU weight (cgroup v1 cpu.shares; v2
	// cpu.weight is derived from it).
	CPUShares *uint64
	// CPUQuota is the CFS quota in µs per CPUPeriod; -1 is unlimited.
	CPUQuota  *int64
	CPUPeriod *uint64
	// Memory is the memory limit in bytes.
	Memory *int64
	// Pids is the maximum number of tasks.
	Pids *int64
}

// MilliCPUToShares converts a CPU request to cpu.shares, at least
// MinShares and at most MaxShares.
func MilliCPUToShares(milli int64) uint64 {
	if milli <= 0 {
		return MinShares
	}
	shares := milli * sharesPerCPU / 1000
	return uint64(min(max(shares, MinShares), MaxShares))
}

// MilliCPUToQuota converts a CPU limit to a CFS quota per period: 0 for no
// limit, at least the kernel's 1 ms otherwise.
func MilliCPUToQuota(milli, period int64) int64 {
	if milli <= 0 {
		return 0
	}
	return max(milli*period/1000, minQuota)
}

// PodLimits are the limits of a pod's cgroup, as upstream computes them:
// requests and limits summed over the containers (init containers and
// sidecars counted as the scheduler counts them), plus the pod's overhead
// (from its RuntimeClass); pod-level resources where the pod sets them.
// Guaranteed pods get CPU shares, quota and the memory limit; Burstable
// pods get shares, and quota and memory only when every container (or the
// pod) sets that limit, since an unlimited container leaves the pod
// unlimited; BestEffort pods get the minimum shares. pidsLimit > 0 limits
// the pod's tasks (--pod-max-pids) whatever its class.
func PodLimits(pod *v1.Pod, pidsLimit int64) Limits {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lims := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memDeclared := true, true
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Resources.Limits.Cpu().IsZero() {
				cpuDeclared = false
			}
			if cs[i].Resources.Limits.Memory().IsZero() {
				memDeclared = false
			}
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuDeclared = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memDeclared = true
		}
	}
	var cpuReq, cpuLim, memLim int64
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpuReq = q.MilliValue()
	}
	if q, ok := lims[v1.ResourceCPU]; ok {
		cpuLim = q.MilliValue()
	}
	if q, ok := lims[v1.ResourceMemory]; ok {
		memLim = q.Value()
	}
	shares := MilliCPUToShares(cpuReq)
	quota := MilliCPUToQuota(cpuLim, QuotaPeriod)
	period := uint64(QuotaPeriod)

	var l Limits
	switch status.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		l = Limits{CPUShares: &shares, CPUQuota: &quota, CPUPeriod: &period, Memory: &memLim}
	case v1.PodQOSBurstable:
		l.CPUShares = &shares
		if cpuDeclared {
			l.CPUQuota, l.CPUPeriod = &quota, &period
		}
		if memDeclared {
			l.Memory = &memLim
		}
	default:
		min := uint64(MinShares)
		l.CPUShares = &min
	}
	if pidsLimit > 0 {
		l.Pids = &pidsLimit
	}
	return l
}

// PodCPURequest is the pod's CPU request in millicores, what the burstable
// cgroup's shares add up (BurstableShares).
func PodCPURequest(pod *v1.Pod) int64 {
	q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceCPU]
	if !ok {
		return 0
	}
	return q.MilliValue()
}

// BurstableShares is the burstable cgroup's cpu.shares: the CPU requests of
// its pods added up, so that under contention the burstable pods together
// get what they asked for next to the Guaranteed ones. The besteffort
// cgroup always has MinShares.
func BurstableShares(milliRequests []int64) uint64 {
	var sum int64
	for _, m := range milliRequests {
		sum += m
	}
	return MilliCPUToShares(sum)
}
