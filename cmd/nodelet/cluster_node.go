package main

import (
	"context"
)

// nodeRunner registers the Node, keeps its status and Lease fresh.
// TODO(node): wire pkg/node here.
func (c *clusterEnv) nodeRunner() (func(context.Context), error) {
	return func(ctx context.Context) { <-ctx.Done() }, nil
}
