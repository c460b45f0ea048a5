package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/apistatus"
	"github.com/nodelet/nodelet/pkg/mirror"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/volumes"
)

// podMember returns the agent's view of the cluster (mirror pods, status
// sync, final deletion) and the components that do its queued work.
// volumeProvider may be nil.
func (c *cluster) podMember(pods *pod.Manager, volumeProvider *volumes.Provider) (agent.Cluster, []component) {
	mirrors := mirror.NewClient(c.client, c.nodeName, pods)
	statuses := apistatus.NewManager(c.client, pods, apistatus.Options{})
	return podMember{mirrors: mirrors, statuses: statuses, volumes: volumeProvider},
		[]component{component{"mirror pods", mirrors.Run}, component{"pod status", statuses.Run}}
}

// podMember joins mirror pods and status sync into an agent.Cluster.
type podMember struct {
	mirrors  *mirror.Client
	statuses *apistatus.Manager
	// volumes, when set, tears the volumes of a pod gone for good down
	// at once (tmpfs with secrets), not only when its directory goes.
	volumes *volumes.Provider
}

var _ agent.Cluster = podMember{}

func (p podMember) SyncMirror(ctx context.Context, static, m *v1.Pod) error {
	return p.mirrors.SyncMirror(ctx, static, m)
}

func (p podMember) DeleteMirror(ctx context.Context, m *v1.Pod) error {
	return p.mirrors.DeleteMirror(ctx, m)
}

func (p podMember) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	p.statuses.SetPodStatus(pod, status)
}

func (p podMember) PodKilled(pod *v1.Pod, status v1.PodStatus) {
	p.statuses.PodKilled(pod, status)
}

func (p podMember) ForgetPod(uid types.UID) {
	p.statuses.ForgetPod(uid)
	p.mirrors.Forget(uid)
	if p.volumes != nil {
		p.volumes.Teardown(uid)
	}
}
