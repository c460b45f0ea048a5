package main

import (
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/options"
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
