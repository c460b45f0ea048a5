package gc

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// Runtime is what container garbage collection needs from the container
// runtime. nodelet's CRI client (pkg/runtime/cri.Client) satisfies it as is;
// NewCRIRuntime adapts the raw generated gRPC client. Errors must keep the
// gRPC status (status.Code) so that NotFound is recognised.
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

// PodUIDLabel is the label that carries the pod UID on containers; containers
// without it were not created for a pod by nodelet (or the upstream kubelet)
// and are left alone.
const PodUIDLabel = "io.kubernetes.pod.uid"

// NewCRIRuntime adapts the generated CRI runtime gRPC client to Runtime.
func NewCRIRuntime(rs runtimeapi.RuntimeServiceClient) Runtime { return criRuntime{rs} }

type criRuntime struct {
	rs runtimeapi.RuntimeServiceClient
}

func (c criRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	return resp.GetContainers(), nil
}

func (c criRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatus, error) {
	resp, err := c.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("CRI ContainerStatus %s: %w", id, err)
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("CRI ContainerStatus %s: %w", id, status.Error(codes.NotFound, "empty status"))
	}
	return resp.GetStatus(), nil
}

func (c criRuntime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	secs := int64((max(grace, 0) + time.Second - 1) / time.Second)
	if _, err := c.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: secs}); err != nil {
		return fmt.Errorf("CRI StopContainer %s: %w", id, err)
	}
	return nil
}

func (c criRuntime) RemoveContainer(ctx context.Context, id string) error {
	if _, err := c.rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("CRI RemoveContainer %s: %w", id, err)
	}
	return nil
}

func (c criRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	return resp.GetItems(), nil
}

func (c criRuntime) StopPodSandbox(ctx context.Context, id string) error {
	if _, err := c.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("CRI StopPodSandbox %s: %w", id, err)
	}
	return nil
}

func (c criRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	if _, err := c.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("CRI RemovePodSandbox %s: %w", id, err)
	}
	return nil
}

// fromCRIContainer converts a listed container; ok is false for containers
// without a pod UID label.
func fromCRIContainer(c *runtimeapi.Container) (Container, bool) {
	uid := c.GetLabels()[PodUIDLabel]
	if uid == "" {
		return Container{}, false
	}
	return Container{
		ID:        c.GetId(),
		PodUID:    types.UID(uid),
		Name:      c.GetMetadata().GetName(),
		SandboxID: c.GetPodSandboxId(),
		State:     cri.ContainerState(c.GetState()),
		Attempt:   c.GetMetadata().GetAttempt(),
		CreatedAt: cri.TimeFromUnixNano(c.GetCreatedAt()),
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
		State:     cri.SandboxState(s.GetState()),
		Attempt:   s.GetMetadata().GetAttempt(),
		CreatedAt: cri.TimeFromUnixNano(s.GetCreatedAt()),
	}, true
}
