//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestClusterLifecycle checks through a real API server what the
// lifecycle work reports there: the FailedPostStartHook event, a
// DeadlineExceeded pod, a termination message, and a restartPolicy Never
// pod with a sidecar that completes with its sidecar's status in
// initContainerStatuses.
func TestClusterLifecycle(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)

	apiPod := func(name, spec string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
%s`, name, framework.NodeName, spec)
	}
	manifests := apiPod("failhook", `  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
    lifecycle:
      postStart: {exec: {command: ["sh", "-c", "exit 1"]}}
`) + "---\n" + apiPod("deadline", `  activeDeadlineSeconds: 3
  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
`) + "---\n" + apiPod("withsidecar", `  restartPolicy: Never
  initContainers:
  - name: side
    image: busybox:1.35
    restartPolicy: Always
    command: ["sleep", "3600"]
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "sleep 2; printf finished > /dev/termination-log"]
`)
	if out, err := cluster.KubectlInput(manifests, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	cpWaitDescribeEvents(t, cluster, "failhook", "FailedPostStartHook")

	p := cpWaitPod(t, admin, "deadline", 60*time.Second, "Failed", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	if p.Status.Reason != "DeadlineExceeded" {
		t.Errorf("deadline pod: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	cpWaitDescribeEvents(t, cluster, "deadline", "DeadlineExceeded")

	p = cpWaitPod(t, admin, "withsidecar", 60*time.Second, "Succeeded with the sidecar stopped", func(p *v1.Pod) bool {
		side := framework.InitContainerStatus(p, "side")
		return p != nil && p.Status.Phase == v1.PodSucceeded && side != nil && side.State.Terminated != nil
	})
	if app := framework.ContainerStatus(p, "app"); app.State.Terminated == nil || app.State.Terminated.Message != "finished" {
		t.Errorf("app state %+v, want terminated with message \"finished\"", app.State)
	}
	if side := framework.InitContainerStatus(p, "side"); side.Started == nil || side.RestartCount != 0 {
		t.Errorf("sidecar status %+v", side)
	}
}
