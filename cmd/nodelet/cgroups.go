package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/cgroups"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pleg"
)

// podCgroups makes the pod cgroup manager when --cgroups-per-qos asks for
// one (nil otherwise: containers go in the runtime's default cgroup). What
// the host cannot do as asked stops nodelet.
func podCgroups(opts *options.Options) (*cgroups.Manager, error) {
	if !opts.CgroupsPerQOS {
		klog.InfoS("Pod cgroups off (--cgroups-per-qos=false): containers get the runtime's default cgroup parent")
		return nil, nil
	}
	m, err := cgroups.New(cgroups.Config{Driver: opts.CgroupDriver, Root: opts.CgroupRoot, PodPidsLimit: opts.PodPidsLimit})
	if err != nil {
		return nil, fmt.Errorf("--cgroups-per-qos: %w", err)
	}
	return m, nil
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
