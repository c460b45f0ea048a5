package main

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/apistatus"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/mirror"
	"github.com/nodelet/nodelet/pkg/volumes"
)

// apiSource returns the runner of the API server pod source, which writes
// to out. It is also the runner of the pod half's background work (mirror
// retries and orphan deletion, status writes) that podCluster builds: run
// starts source runners only once every part is built.
func (c *clusterEnv) apiSource(out chan<- config.PodUpdate) (func(context.Context), error) {
	src := config.NewAPISource(c.client, c.nodeName, out)
	return func(ctx context.Context) {
		var wg wait.Group
		for _, r := range c.podRunners {
			wg.StartWithContext(ctx, r)
		}
		src.Run(ctx)
		wg.Wait()
	}, nil
}

// podCluster returns the agent's view of the cluster: mirror pods, status
// sync, final deletion.
func (c *clusterEnv) podCluster() (agent.Cluster, error) {
	if c.pods == nil {
		return nil, errors.New("pod cluster: the pod manager is not set")
	}
	mirrors := mirror.NewClient(c.client, c.nodeName, c.pods)
	statuses := apistatus.NewManager(c.client, c.pods, apistatus.Options{})
	c.podRunners = append(c.podRunners, mirrors.Run, statuses.Run)
	return podMember{mirrors: mirrors, statuses: statuses, volumes: c.volumes}, nil
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
