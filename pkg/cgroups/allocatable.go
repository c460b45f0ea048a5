package cgroups

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ResourcePID is the process-ID resource of reservations ("pid").
const ResourcePID v1.ResourceName = "pid"

// AllocatableLimits are the limits a node-level cgroup (kubepods, or a
// reserved cgroup) gets for resources rl, as upstream: CPU as shares only
// (never a CFS quota: the CPU is shared, not capped), memory as a limit,
// and pid as the task limit. A resource rl does not name is left alone.
func AllocatableLimits(rl v1.ResourceList) Limits {
	var l Limits
	if q, ok := rl[v1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		l.CPUShares = &s
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		m := q.Value()
		if m <= 0 {
			m = 1 // a zero limit would mean "unlimited" to FilesV1/V2
		}
		l.Memory = &m
	}
	if q, ok := rl[ResourcePID]; ok {
		p := q.Value()
		if p <= 0 {
			p = 1
		}
		l.Pids = &p
	}
	return l
}

// KubepodsResources is what the kubepods cgroup is limited to, as
// upstream: the node's capacity, less --kube-reserved and
// --system-reserved when pods are enforced (--enforce-node-allocatable
// pods). The hard eviction thresholds are not taken out: they leave the
// room the eviction manager acts in. Floored at zero.
func KubepodsResources(capacity, kubeReserved, systemReserved v1.ResourceList, enforcePods bool) v1.ResourceList {
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, ResourcePID} {
		q, ok := capacity[name]
		if !ok {
			continue
		}
		q = q.DeepCopy()
		if enforcePods {
			for _, rl := range []v1.ResourceList{kubeReserved, systemReserved} {
				if r, ok := rl[name]; ok {
					q.Sub(r)
				}
			}
		}
		if q.Sign() < 0 {
			q.Set(0)
		}
		out[name] = q
	}
	return out
}

// EnforceKubepods writes rl (KubepodsResources) onto the kubepods cgroup.
// A memory limit below what the pods already use is refused by the kernel:
// the error says so.
func (m *Manager) EnforceKubepods(rl v1.ResourceList) error {
	rel := CgroupfsPath(PodsName(m.root))
	l := AllocatableLimits(rl)
	if l.Pids != nil && !m.has(ControllerPids) {
		klog.InfoS("No pids controller: the kubepods task limit is not set", "pids", *l.Pids)
		l.Pids = nil
	}
	if err := writeFiles(m.hiers, rel, m.files(l)); err != nil {
		return fmt.Errorf("node allocatable on %s: %w", m.parent(PodsName(m.root)), err)
	}
	klog.InfoS("Node allocatable on kubepods", "cgroup", m.parent(PodsName(m.root)), "limits", rl)
	return nil
}

// EnforceReserved writes the reservation rl onto an existing cgroup (the
// --system-reserved-cgroup or --kube-reserved-cgroup, a cgroupfs path).
// As upstream, nodelet does not make it: it must exist in every hierarchy
// of the controllers the limits need.
func (m *Manager) EnforceReserved(cgroup string, rl v1.ResourceList) error {
	rel := filepath.Clean("/" + cgroup)
	files := m.files(AllocatableLimits(rl))
	// Checked even when nothing is reserved, as upstream: a typo in the
	// cgroup's name is an error, not an enforcement of nothing.
	for _, h := range m.hiers {
		if !h.has(ControllerCPU) && !h.has(ControllerMemory) && !h.has(ControllerPids) {
			continue
		}
		if _, err := os.Stat(filepath.Join(h.dir, rel)); err != nil {
			return fmt.Errorf("cgroup %s does not exist in %s: %w", rel, h.dir, err)
		}
	}
	if err := writeFiles(m.hiers, rel, files); err != nil {
		return fmt.Errorf("reserved limits on %s: %w", rel, err)
	}
	klog.InfoS("Reserved limits enforced", "cgroup", rel, "limits", rl)
	return nil
}

func (m *Manager) has(controller string) bool {
	for _, h := range m.hiers {
		if h.has(controller) {
			return true
		}
	}
	return false
}
