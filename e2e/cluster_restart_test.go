//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestFinishedPodNotRunAfterRestart: a pod that completed (restartPolicy
// Never) is Succeeded in the API; nodelet stops, its containers are
// collected from the runtime, nodelet starts again: the pod is not run a
// second time, and the API keeps showing it Succeeded.
func TestFinishedPodNotRunAfterRestart(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	client := framework.CRIClient(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	if _, err := cluster.KubectlInput(cpPodYAML("once", "echo ran", 1), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	p := cpWaitPod(t, admin, "once", 60*time.Second, "Succeeded", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodSucceeded
	})
	n.Stop()
	byUID := &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)}}
	sandboxes, err := client.ListPodSandbox(ctx, byUID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if err := client.RemovePodSandbox(ctx, sb.Id); err != nil {
			t.Fatal(err)
		}
	}

	n.Start()
	// Once the restarted nodelet serves the pod, it has decided about it;
	// once a pod started after that runs (seen by a later relist), there
	// is still no sandbox.
	n.WaitPod("once", 60*time.Second, "served again", func(p *v1.Pod) bool { return p != nil })
	n.WriteManifest("later.yaml", podManifest("later", container("app", "sleep 3600")))
	n.WaitPod("later"+staticSuffix, 60*time.Second, "running", framework.Running)
	sandboxes, err = client.ListPodSandbox(ctx, byUID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 0 {
		t.Fatalf("finished pod run again after the restart: %d sandboxes", len(sandboxes))
	}
	if got := cpWaitPod(t, admin, "once", time.Second, "present", func(p *v1.Pod) bool { return p != nil }); got.Status.Phase != v1.PodSucceeded {
		t.Errorf("phase in the API after the restart: %s (%s)", got.Status.Phase, fmt.Sprint(got.Status.Reason))
	}
}
