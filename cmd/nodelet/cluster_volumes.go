package main

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/podsync"
	"github.com/nodelet/nodelet/pkg/servicenv"
	"github.com/nodelet/nodelet/pkg/volumes"
)

var _ podsync.VolumeProvider = (*volumes.Provider)(nil)

// volumeProvider returns the maker of volumes with content from the API
// server (projected service-account tokens, config maps, secrets, downward
// API) and reads persistent volume claims for the persistentVolumeClaim
// volumes (local and hostPath PVs); it also reads the config maps and secrets of environment
// variables, which it watches. Standalone there is none, so pods with such
// volumes fail with a clear reason. allocatable is what a downward API
// resourceFieldRef to an unset limit reads; wake asks for a pod to be
// synced when an object it waits for appeared.
func (c *cluster) volumeProvider(pods *pod.Manager, allocatable v1.ResourceList, wake func(types.UID)) (*volumes.Provider, error) {
	return volumes.NewProvider(volumes.Options{
		Client:          c.client,
		RootDir:         c.opts.RootDir,
		Pods:            pods,
		NodeAllocatable: allocatable,
		Wake:            wake,
		Claims:          volumes.ClaimsFromAPI(c.client, c.nodeName),
	})
}

// serviceEnv is the source of the service variables of container
// environments, from one Service informer.
func (c *cluster) serviceEnv() *servicenv.Source { return servicenv.NewSource(c.client) }
