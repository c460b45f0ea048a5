package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/cgroups"
	"github.com/nodelet/nodelet/pkg/metrics"
	"github.com/nodelet/nodelet/pkg/node"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pleg"
)

// podCgroups makes the pod cgroup manager when --cgroups-per-qos asks for
// one (nil otherwise: containers go in the runtime's default cgroup). What
// the host cannot do as asked stops nodelet.
func podCgroups(ctx context.Context, opts *options.Options) (*cgroups.Manager, error) {
	if len(opts.EvictionHard) > 0 {
		klog.InfoS("Hard eviction thresholds are taken out of node allocatable only: nodelet does not evict pods", "evictionHard", opts.EvictionHard)
	}
	if !opts.CgroupsPerQOS {
		klog.InfoS("Pod cgroups off (--cgroups-per-qos=false): containers get the runtime's default cgroup parent")
		return nil, nil
	}
	m, err := cgroups.New(cgroups.Config{
		Driver: opts.CgroupDriver, Root: opts.CgroupRoot, PodPidsLimit: opts.PodPidsLimit,
		Observe: metrics.ObserveCgroupOperation,
	})
	if err != nil {
		return nil, fmt.Errorf("--cgroups-per-qos: %w", err)
	}
	if err := enforceNodeAllocatable(ctx, opts, m); err != nil {
		return nil, err
	}
	return m, nil
}

// enforceNodeAllocatable sets the node-level cgroups as upstream does at
// start: kubepods always gets the node's CPU shares, memory and task limit
// (its capacity, or with --enforce-node-allocatable=pods the capacity less
// --kube-reserved and --system-reserved); the reserved cgroups get their
// reservation when their level is enforced. The hard eviction thresholds
// lower the allocatable admission uses, not these limits.
func enforceNodeAllocatable(ctx context.Context, opts *options.Options, m *cgroups.Manager) error {
	facts := node.NewHostFacts(node.HostConfig{RootDir: opts.RootDir}).Facts(ctx)
	capacity := v1.ResourceList{}
	if facts.Machine.CPUs > 0 {
		capacity[v1.ResourceCPU] = *resource.NewMilliQuantity(facts.Machine.CPUs*1000, resource.DecimalSI)
	}
	if facts.Machine.MemoryBytes > 0 {
		capacity[v1.ResourceMemory] = *resource.NewQuantity(facts.Machine.MemoryBytes, resource.BinarySI)
	}
	if facts.PIDsMax > 0 {
		capacity[cgroups.ResourcePID] = *resource.NewQuantity(facts.PIDsMax, resource.DecimalSI)
	}
	res := parseReservations(opts)
	enforcePods := opts.Enforces(options.EnforcePods)
	if _, cpu := capacity[v1.ResourceCPU]; enforcePods && (!cpu || facts.Machine.MemoryBytes <= 0) {
		return fmt.Errorf("--enforce-node-allocatable=pods: the node's CPU and memory capacity could not be read (%v), so kubepods cannot be limited", capacity)
	}
	if err := m.EnforceKubepods(cgroups.KubepodsResources(capacity, res.kube, res.system, enforcePods)); err != nil {
		return fmt.Errorf("--enforce-node-allocatable: %w", err)
	}
	if opts.Enforces(options.EnforceSystemReserved) {
		if err := m.EnforceReserved(opts.SystemReservedCgroup, res.system); err != nil {
			return fmt.Errorf("failed to enforce System Reserved Cgroup Limits on %q (--system-reserved-cgroup): %w", opts.SystemReservedCgroup, err)
		}
	}
	if opts.Enforces(options.EnforceKubeReserved) {
		if err := m.EnforceReserved(opts.KubeReservedCgroup, res.kube); err != nil {
			return fmt.Errorf("failed to enforce Kube Reserved Cgroup Limits on %q (--kube-reserved-cgroup): %w", opts.KubeReservedCgroup, err)
		}
	}
	return nil
}

// sweepPodCgroups removes the cgroups of pods that are neither wanted nor
// in the runtime: what a pod left when it went while nodelet was down, or
// when its removal failed. It lists the runtime afresh (after container
// GC), so a pod GC just removed is swept now rather than at the next pass.
func sweepPodCgroups(ctx context.Context, m *cgroups.Manager, rt pleg.Lister, wanted func(types.UID) bool) error {
	pods, err := rt.ListPods(ctx)
	if err != nil {
		return fmt.Errorf("pod cgroups: list the runtime: %w", err)
	}
	inRuntime := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		inRuntime[p.UID] = true
	}
	return m.RemoveOrphans(func(uid types.UID) bool { return inRuntime[uid] || wanted(uid) })
}
