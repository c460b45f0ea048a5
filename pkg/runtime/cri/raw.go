package cri

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// RuntimeService returns the generated CRI runtime client on this Client's
// connection, for packages (garbage collection) that bring their own
// narrow adapters and timeouts.
func (c *Client) RuntimeService() runtimeapi.RuntimeServiceClient { return c.rt }

// ImageService returns the generated CRI image client on this connection.
func (c *Client) ImageService() runtimeapi.ImageServiceClient { return c.img }
