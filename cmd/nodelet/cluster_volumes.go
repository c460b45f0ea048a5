package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime/podsync"
	"github.com/nodelet/nodelet/pkg/volumes"
)

var _ podsync.VolumeProvider = (*volumes.Provider)(nil)

// volumeProvider returns the maker of volumes with content from the API
// server (projected service-account tokens, config maps, secrets, downward
// API), its refresher running until ctx is done. Without a cluster (c is
// nil) it returns nil, so pods with such volumes fail with a clear reason.
// allocatable is what a downward API resourceFieldRef to an unset limit
// reads.
func (c *clusterEnv) volumeProvider(ctx context.Context, allocatable v1.ResourceList) podsync.VolumeProvider {
	if c == nil {
		return nil
	}
	p, err := volumes.NewProvider(volumes.Options{
		Client:          c.client,
		RootDir:         c.opts.RootDir,
		Pods:            clusterPods{c},
		NodeAllocatable: allocatable,
		Wake: func(uid types.UID) {
			if c.resync != nil {
				c.resync(uid)
			}
		},
	})
	if err != nil {
		// Only for a missing client or root dir, both set by now.
		klog.ErrorS(err, "Projected volumes unavailable")
		return nil
	}
	c.volumes = p
	go p.Run(ctx)
	return p
}

// objectSource returns the reader of the config maps and secrets env vars
// and pull secrets refer to: the volume provider, which watches them. nil
// without a cluster; volumeProvider must have run before.
func (c *clusterEnv) objectSource() podsync.ObjectSource {
	if c == nil || c.volumes == nil {
		return nil
	}
	return c.volumes
}

// clusterPods looks pods up in the pod manager, which run sets on c after
// building the syncer. The refresher looks only pods up that it was asked
// to prepare, which happens after that, so it never sees c.pods unset.
type clusterPods struct{ c *clusterEnv }

func (l clusterPods) PodByUID(uid types.UID) (*v1.Pod, bool) {
	if l.c.pods == nil {
		return nil, false
	}
	return l.c.pods.PodByUID(uid)
}
