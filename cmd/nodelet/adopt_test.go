package main

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pod"
)

func TestRunningStatic(t *testing.T) {
	sb := func(uid, source string, created int64, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{State: state, CreatedAt: created,
			Labels:      map[string]string{"io.kubernetes.pod.name": "etcd-n", "io.kubernetes.pod.namespace": "kube-system", "io.kubernetes.pod.uid": uid},
			Annotations: map[string]string{"kubernetes.io/config.source": source, "kubernetes.io/config.hash": uid}}
	}
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	got := runningStatic([]*runtimeapi.PodSandbox{
		sb("old", "file", 1, ready),
		sb("new", "file", 2, ready),
		sb("dead", "file", 3, notReady),
		sb("api", "api", 4, ready),
		{State: ready, Labels: map[string]string{"other": "x"}},
	})
	want := map[config.AdoptKey]config.Running{{Source: "file", Namespace: "kube-system", Name: "etcd-n"}: {UID: "new", Hash: "new"}}
	if len(got) != len(want) || got[config.AdoptKey{Source: "file", Namespace: "kube-system", Name: "etcd-n"}] != want[config.AdoptKey{Source: "file", Namespace: "kube-system", Name: "etcd-n"}] {
		t.Errorf("runningStatic = %v, want %v", got, want)
	}
}

func TestNodeIPList(t *testing.T) {
	for _, tc := range []struct {
		nodeIP, host string
		want         []string
	}{
		{"", "192.0.2.2", []string{"192.0.2.2"}},
		{"192.0.2.2", "192.0.2.2", []string{"192.0.2.2"}},
		{"192.0.2.2,2001:db8::2", "192.0.2.2", []string{"192.0.2.2", "2001:db8::2"}},
		{"2001:db8::2,192.0.2.2", "2001:db8::2", []string{"2001:db8::2", "192.0.2.2"}},
	} {
		got := nodeIPList(tc.host, &options.Options{NodeIP: tc.nodeIP})
		if !slices.Equal(got, tc.want) {
			t.Errorf("nodeIPList(%q, --node-ip %q) = %q, want %q", tc.host, tc.nodeIP, got, tc.want)
		}
	}
}

type fakeMirrorLister struct {
	pods []v1.Pod
	err  error
	sel  string
}

func (f *fakeMirrorLister) List(_ context.Context, opts metav1.ListOptions) (*v1.PodList, error) {
	f.sel = opts.FieldSelector
	return &v1.PodList{Items: f.pods}, f.err
}

func TestReportedStatusesOfStaticPodsBeforeTheirMirrors(t *testing.T) {
	status := []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://abc", Ready: true}}
	mirror := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-0-node", Namespace: "default",
		Annotations: map[string]string{pod.ConfigMirrorAnnotationKey: "h"}}, Status: v1.PodStatus{ContainerStatuses: status}}
	plain := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-0", Namespace: "default"},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "x"}}}}
	lister := &fakeMirrorLister{pods: []v1.Pod{mirror, plain}}
	atStart := startupMirrorStatuses(context.Background(), lister, "node")
	if lister.sel != "spec.nodeName=node" {
		t.Errorf("field selector %q, want this node's pods", lister.sel)
	}
	if len(atStart) != 1 {
		t.Fatalf("mirror statuses at start: %v, want only the mirror pod's", atStart)
	}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-0-node", Namespace: "default", UID: "u1",
		Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.FileSource}}}
	got := reportedStatuses(pod.NewManager(), atStart, static)
	if len(got) != 1 || got[0].ContainerID != "containerd://abc" {
		t.Errorf("static pod without its mirror yet: %v, want the statuses listed at start", got)
	}

	failing := &fakeMirrorLister{err: errors.New("connection refused")}
	if got := startupMirrorStatuses(context.Background(), failing, "node"); got != nil {
		t.Errorf("API down: %v, want nothing", got)
	}
}
