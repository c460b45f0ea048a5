package images

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is what image garbage collection needs from the container runtime;
// *cri.Client is the one implementation. Errors of an image that does not
// exist (any more) must match cri.ErrNotFound.
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
