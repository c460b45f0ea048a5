package podsync

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// PodCgroups makes and removes pods' cgroups (*cgroups.Manager).
type PodCgroups interface {
	// EnsurePod makes the pod's cgroup with its limits if it is not made
	// so, and returns it as the runtime's CgroupParent.
	EnsurePod(pod *v1.Pod) (string, error)
	// RemovePod removes the cgroup of a pod whose containers are gone.
	RemovePod(uid types.UID) error
}

// cgroupHook is the pod-resource pipeline's pod cgroup step: the cgroup is
// made with the pod's limits before its sandbox, which is created in it
// (and so are its containers), and removed once the pod's containers and
// sandboxes are.
type cgroupHook struct {
	cgroups PodCgroups
}

var (
	_ SandboxHook   = (*cgroupHook)(nil)
	_ RunningKeeper = (*cgroupHook)(nil)
	_ Releaser      = (*cgroupHook)(nil)
)

func (*cgroupHook) Name() string { return "pod cgroup" }

func (h *cgroupHook) PrepareSandbox(_ context.Context, pod *v1.Pod) (criconfig.SandboxResources, error) {
	parent, err := h.cgroups.EnsurePod(pod)
	if err != nil {
		return criconfig.SandboxResources{}, err
	}
	return criconfig.SandboxResources{CgroupParent: parent}, nil
}

func (*cgroupHook) Prepare(context.Context, *v1.Pod) (Resources, error) { return Resources{}, nil }

// KeepRunning makes sure a running pod's cgroup is there and counted: after
// a restart of nodelet that is how the burstable cgroup's shares learn of
// the pods adopted. For a pod known as it is, it does nothing.
func (h *cgroupHook) KeepRunning(_ context.Context, pod *v1.Pod) error {
	_, err := h.cgroups.EnsurePod(pod)
	return err
}

// Release removes the cgroup of a pod all of whose containers and
// sandboxes are stopped, as upstream does when a pod terminates: their
// cgroups went with their processes. A pod started again (a static pod
// re-added) gets its cgroup made anew before its new sandbox.
func (h *cgroupHook) Release(_ context.Context, uid types.UID) error {
	return h.cgroups.RemovePod(uid)
}

func (h *cgroupHook) Teardown(_ context.Context, uid types.UID) error {
	return h.cgroups.RemovePod(uid)
}
