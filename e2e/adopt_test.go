//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestAdoptsUpstreamStampedContainer: a container stamped as the upstream
// kubelet v1.37 stamps one (its labels; its annotations: upstream's hash of
// the container's name and image, restart count, termination message
// settings, and no nodelet annotation) is adopted by nodelet as the pod's
// container: not restarted, its restart count kept. And nodelet's own
// container carries upstream's hash value, so the upstream kubelet adopts it
// the same way.
func TestAdoptsUpstreamStampedContainer(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	n.WriteManifest("adopt.yaml", podManifest("adopt", container("a", "sleep 3600")))
	p := n.WaitPod("adopt"+staticSuffix, 60*time.Second, "running", framework.Running)
	ctx := context.Background()
	client := framework.CRIClient(t, rt)
	state, err := client.PodState(ctx, p.UID)
	if err != nil || len(state.Sandboxes) != 1 || len(state.Containers) != 1 {
		t.Fatalf("pod state: %v, %+v", err, state)
	}
	mine := state.Containers[0]
	// upstream's HashContainer of {name: a, image: busybox:1.35}, computed
	// with upstream's code (pkg/runtime's unit test has more).
	if got := mine.Annotations["io.kubernetes.container.hash"]; got != "324f4b18" {
		t.Errorf("nodelet's hash annotation %q, want upstream's 324f4b18", got)
	}
	if mine.Annotations["nodelet.io/container.specHash"] == "" {
		t.Errorf("static pod's container lacks nodelet.io/container.specHash: %v", mine.Annotations)
	}
	st, err := client.ContainerStatus(ctx, mine.Id, false)
	if err != nil {
		t.Fatal(err)
	}

	// What the upstream kubelet would have left: the same pod's container,
	// instance 1, stamped its way.
	n.Stop()
	if err := client.StopContainer(ctx, mine.Id, 0); err != nil {
		t.Fatal(err)
	}
	if err := client.RemoveContainer(ctx, mine.Id); err != nil {
		t.Fatal(err)
	}
	sb := state.Sandboxes[0]
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "a", Attempt: 1},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:1.35"},
		Command:  []string{"sh", "-c", "sleep 3600"},
		LogPath:  "a/1.log",
		Labels: map[string]string{
			"io.kubernetes.container.name": "a",
			"io.kubernetes.pod.name":       p.Name,
			"io.kubernetes.pod.namespace":  p.Namespace,
			"io.kubernetes.pod.uid":        string(p.UID),
		},
		Annotations: map[string]string{
			"io.kubernetes.container.hash":                     "324f4b18",
			"io.kubernetes.container.restartCount":             "1",
			"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
			"io.kubernetes.container.terminationMessagePolicy": "File",
			"io.kubernetes.pod.terminationGracePeriod":         "5",
		},
	}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: sb.Metadata, Labels: sb.Labels, Annotations: sb.Annotations,
		LogDirectory: filepath.Dir(filepath.Dir(st.LogPath))}
	id, err := client.CreateContainer(ctx, sb.Id, cfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}

	n.Start()
	adopted := func(p *v1.Pod) bool {
		c := framework.ContainerStatus(p, "a")
		return framework.Running(p) && c != nil && strings.HasSuffix(c.ContainerID, "://"+id)
	}
	p = n.WaitPod("adopt"+staticSuffix, 60*time.Second, "the upstream-stamped container adopted", func(p *v1.Pod) bool {
		return p != nil && (adopted(p) || framework.ContainerStatus(p, "a") != nil && framework.ContainerStatus(p, "a").RestartCount > 1)
	})
	if !adopted(p) {
		t.Fatalf("container a replaced: status %+v, want %s kept", framework.ContainerStatus(p, "a"), id)
	}
	if rc := framework.ContainerStatus(p, "a").RestartCount; rc != 1 {
		t.Errorf("restart count %d, want upstream's 1", rc)
	}
	// Later syncs keep it too: a pod started after it is seen running only
	// after relists and syncs that came later.
	n.WriteManifest("later.yaml", podManifest("later", container("app", "sleep 3600")))
	n.WaitPod("later"+staticSuffix, 60*time.Second, "running", framework.Running)
	p, _ = n.Pod("adopt" + staticSuffix)
	if p == nil || !adopted(p) {
		t.Errorf("the adopted container was replaced later: %+v", p)
	}
}
