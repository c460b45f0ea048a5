package gc

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/cristatus"
)

// Runtime is what container garbage collection needs from the container
// runtime; *cri.Client is the one implementation. Errors of a sandbox or
// container that does not exist (any more) must match cri.ErrNotFound.
type Runtime interface {
	// ListContainers and ListPodSandbox with a nil filter must return all
	// states.
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatus, error)
	// StopContainer stops a container, killing it after grace (0: at once).
	StopContainer(ctx context.Context, containerID string, grace time.Duration) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
}

// fromCRIContainer converts a listed container; ok is false for containers
// without a pod UID label: they were not created for a pod by nodelet (or
// the upstream kubelet) and are left alone.
func fromCRIContainer(c *runtimeapi.Container) (Container, bool) {
	uid := c.GetLabels()[cri.LabelPodUID]
	if uid == "" {
		return Container{}, false
	}
	return Container{
		ID:        c.GetId(),
		PodUID:    types.UID(uid),
		Name:      c.GetMetadata().GetName(),
		SandboxID: c.GetPodSandboxId(),
		State:     cristatus.ContainerState(c.GetState()),
		Attempt:   c.GetMetadata().GetAttempt(),
		CreatedAt: cristatus.TimeFromUnixNano(c.GetCreatedAt()),
	}, true
}

// fromCRISandbox converts a listed sandbox; ok is false without a pod UID.
func fromCRISandbox(s *runtimeapi.PodSandbox) (Sandbox, bool) {
	uid := s.GetMetadata().GetUid()
	if uid == "" {
		return Sandbox{}, false
	}
	return Sandbox{
		ID:        s.GetId(),
		PodUID:    types.UID(uid),
		State:     cristatus.SandboxState(s.GetState()),
		Attempt:   s.GetMetadata().GetAttempt(),
		CreatedAt: cristatus.TimeFromUnixNano(s.GetCreatedAt()),
	}, true
}
