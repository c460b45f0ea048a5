package main

import (
	"context"
	"runtime"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/servicenv"
	"github.com/nodelet/nodelet/pkg/tmpfs"
)

// withEnvSources adds to cfg what container environments are resolved
// from: the node's allocatable resources (resourceFieldRef without a
// limit; nodeAllocatable, shared with the volume provider) and, in cluster
// mode, the service variables from a service informer running until ctx is
// done.
func (c *clusterEnv) withEnvSources(ctx context.Context, allocatable v1.ResourceList, cfg criconfig.ConfigOptions) criconfig.ConfigOptions {
	cfg.NodeAllocatable = allocatable
	if c == nil {
		return cfg
	}
	services := servicenv.NewSource(c.client)
	go services.Run(ctx)
	cfg.ServiceEnv = services.PodVars
	return cfg
}

// nodeAllocatable is what a container may use at most when it sets no
// limit: every CPU, all memory and the root dir's filesystem (nodelet
// reserves nothing for the system).
func nodeAllocatable(rootDir string) v1.ResourceList {
	out := v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)}
	if mem, err := tmpfs.MemTotal(); err == nil {
		out[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	} else {
		klog.ErrorS(err, "Node memory unknown; resourceFieldRef limits.memory without a limit reads 0")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(rootDir, &st); err == nil {
		out[v1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI)
	}
	return out
}
