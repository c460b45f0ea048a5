package main

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// sandboxLister is what staticAdoptions needs of the runtime.
type sandboxLister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}

// staticAdoptions lists the ready sandboxes of static pods at start, so that
// the file and URL sources adopt the identity under which another agent (the
// upstream kubelet) runs them (config.Adoptions). A runtime that cannot list
// them leaves nothing to adopt: nodelet then runs its static pods under its
// own identities, as on a fresh node.
func staticAdoptions(ctx context.Context, rt sandboxLister) (*config.Adoptions, int) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ready := &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}
	sandboxes, err := rt.ListPodSandbox(ctx, ready)
	if err != nil {
		klog.ErrorS(fmt.Errorf("list sandboxes: %w", err), "Static pods running under another agent's identity are not adopted")
		return config.NewAdoptions(nil), 0
	}
	running := runningStatic(sandboxes)
	if len(running) > 0 {
		klog.InfoS("Static pods found running", "pods", len(running))
	}
	return config.NewAdoptions(running), len(running)
}

// runningStatic maps the static pods of ready sandboxes to the identity they
// run under; of two sandboxes of one pod, the newest wins.
func runningStatic(sandboxes []*runtimeapi.PodSandbox) map[config.AdoptKey]config.Running {
	out := map[config.AdoptKey]config.Running{}
	created := map[config.AdoptKey]int64{}
	for _, sb := range sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		id, err := cri.ParseSandboxIdentity(sb.Labels, sb.Annotations)
		if err != nil {
			continue
		}
		source := sb.Annotations[pod.ConfigSourceAnnotationKey]
		if source != pod.FileSource && source != pod.HTTPSource {
			continue
		}
		key := config.AdoptKey{Source: source, Namespace: id.PodNamespace, Name: id.PodName}
		if t, ok := created[key]; ok && t >= sb.CreatedAt {
			continue
		}
		created[key] = sb.CreatedAt
		out[key] = config.Running{UID: id.PodUID, Hash: sb.Annotations[pod.ConfigHashAnnotationKey]}
	}
	return out
}

// mirrorLister is what startupMirrorStatuses needs of the API.
type mirrorLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1.PodList, error)
}

// startupMirrorStatuses returns the container statuses of this node's mirror
// pods as the API shows them at start, by pod full name. Static pods sync
// from their manifests before the API source delivers their mirror pods, so
// without these a static pod adopted from another agent would start its
// probes from scratch and report itself not ready until they pass (a flicker
// the takeover must not show). An API that does not answer in time leaves
// nothing: the probes then start from scratch, as on a fresh node.
func startupMirrorStatuses(ctx context.Context, pods mirrorLister, nodeName string) map[string][]v1.ContainerStatus {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
	if err != nil {
		klog.ErrorS(fmt.Errorf("list mirror pods: %w", err), "Static pods already running start their probes from scratch")
		return nil
	}
	out := map[string][]v1.ContainerStatus{}
	for i := range list.Items {
		if p := &list.Items[i]; pod.IsMirror(p) {
			out[pod.FullName(p)] = p.Status.ContainerStatuses
		}
	}
	return out
}

// reportedStatuses returns the container statuses the API last showed for
// p: its mirror pod's for a static pod (as listed at start while the API
// source has not delivered it yet), else the API pod's own, as the API
// source last delivered it.
func reportedStatuses(pods *pod.Manager, atStart map[string][]v1.ContainerStatus, p *v1.Pod) []v1.ContainerStatus {
	if pod.IsStatic(p) {
		if m, ok := pods.MirrorPodOf(p); ok {
			return m.Status.ContainerStatuses
		}
		return atStart[pod.FullName(p)]
	}
	if cur, ok := pods.PodByUID(p.UID); ok {
		return cur.Status.ContainerStatuses
	}
	return p.Status.ContainerStatuses
}
