package main

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

func TestRunningPods(t *testing.T) {
	labels := func(uid, name string) map[string]string {
		return map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: name, cri.LabelPodNamespace: "default"}
	}
	ctr := func(uid, name, container, image string, state runtimeapi.ContainerState) *runtimeapi.Container {
		l := labels(uid, name)
		l[cri.LabelContainerName] = container
		return &runtimeapi.Container{Labels: l, State: state, Image: &runtimeapi.ImageSpec{Image: image}}
	}
	s := &cri.PodState{
		Sandboxes: []*runtimeapi.PodSandbox{
			{Labels: labels("u1", "web"), State: runtimeapi.PodSandboxState_SANDBOX_READY},
			{Labels: labels("u2", "gone"), State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
			{Labels: labels("u3", "empty"), State: runtimeapi.PodSandboxState_SANDBOX_READY},
			{Labels: map[string]string{"io.other": "x"}, State: runtimeapi.PodSandboxState_SANDBOX_READY},
		},
		Containers: []*runtimeapi.Container{
			ctr("u1", "web", "app", "busybox:1.35", runtimeapi.ContainerState_CONTAINER_RUNNING),
			ctr("u1", "web", "old", "busybox:1.35", runtimeapi.ContainerState_CONTAINER_EXITED),
			ctr("u2", "gone", "app", "busybox:1.35", runtimeapi.ContainerState_CONTAINER_EXITED),
			{Labels: map[string]string{"io.other": "x"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		},
	}
	pods := runningPods(s)
	if len(pods) != 2 || pods[0].Name != "web" || pods[1].Name != "empty" {
		t.Fatalf("pods %+v, want web and empty (ready sandboxes of kubelet pods)", pods)
	}
	if c := pods[0].Spec.Containers; len(c) != 1 || c[0].Name != "app" || c[0].Image != "busybox:1.35" || pods[0].UID != "u1" {
		t.Errorf("web: %+v", pods[0])
	}
	if len(pods[1].Spec.Containers) != 0 {
		t.Errorf("empty: %+v", pods[1])
	}
}
