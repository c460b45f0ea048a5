package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageStatus returns the image named by ref (tag, digest or ID), or nil
// and no error when the runtime does not have it.
func (c *Client) ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return nil, fmt.Errorf("image status %s: %w", ref, classify(err))
	}
	// The CRI answers "not present" with an empty image, not an error.
	if resp.Image == nil || resp.Image.Id == "" {
		return nil, nil
	}
	return resp.Image, nil
}

// PullImage pulls ref and returns the image reference (ID or digest) the
// runtime resolved it to. sandboxConfig may be nil; runtimes use it to pick
// per-pod pull settings. auth, when set, is never logged nor put in an
// error. Only ctx bounds the pull unless Options.PullTimeout is set.
func (c *Client) PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if c.pullTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = c.ctx(ctx, c.pullTimeout)
		defer cancel()
	}
	resp, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image:         &runtimeapi.ImageSpec{Image: ref},
		Auth:          auth,
		SandboxConfig: sandboxConfig,
	})
	if err != nil {
		return "", fmt.Errorf("pull image %s: %w", ref, classify(err))
	}
	return resp.ImageRef, nil
}

// ListImages lists images matching filter (nil: all).
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", classify(err))
	}
	return resp.Images, nil
}

// RemoveImage removes an image. Removing an absent image succeeds.
func (c *Client) RemoveImage(ctx context.Context, ref string) error {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	if _, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		return fmt.Errorf("remove image %s: %w", ref, classify(err))
	}
	return nil
}

// ImageFsInfo returns usage of the filesystems holding images and
// container writable layers.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("image fs info: %w", classify(err))
	}
	return resp, nil
}
