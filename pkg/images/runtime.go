package images

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is what image garbage collection needs from the container runtime.
// nodelet's CRI client (pkg/runtime/cri.Client) satisfies it as is;
// NewCRIRuntime adapts the raw generated gRPC clients. Errors must keep the
// gRPC status (status.Code) so that NotFound is recognised.
type Runtime interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	// RemoveImage removes the image ref names (here: its ID).
	RemoveImage(ctx context.Context, ref string) error
	ImageFsInfoer
	// ListContainers with a nil filter must return containers in all states.
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// ImageFsInfoer reports the runtime's image filesystem (CRI ImageFsInfo).
type ImageFsInfoer interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// NewCRIRuntime adapts the generated CRI gRPC clients (of one connection to
// the runtime's socket) to Runtime.
func NewCRIRuntime(rs runtimeapi.RuntimeServiceClient, is runtimeapi.ImageServiceClient) Runtime {
	return criRuntime{rs: rs, is: is}
}

type criRuntime struct {
	rs runtimeapi.RuntimeServiceClient
	is runtimeapi.ImageServiceClient
}

func (c criRuntime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := c.is.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("CRI ListImages: %w", err)
	}
	return resp.GetImages(), nil
}

func (c criRuntime) RemoveImage(ctx context.Context, ref string) error {
	if _, err := c.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		return fmt.Errorf("CRI RemoveImage %s: %w", ref, err)
	}
	return nil
}

func (c criRuntime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	resp, err := c.is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI ImageFsInfo: %w", err)
	}
	return resp, nil
}

func (c criRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	return resp.GetContainers(), nil
}
