//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestClusterEphemeralContainers runs ephemeral containers the way
// operators add them: `kubectl debug` and the pod's ephemeralcontainers
// subresource through a real API server. One with --target sees the
// target's processes, one without has its own; both show in
// ephemeralContainerStatuses, their logs are served, they are not
// restarted after they exit (the pod's restartPolicy is Always), `kubectl
// debug -i` and `kubectl attach` reach an interactive one, and deleting
// the pod stops it.
func TestClusterEphemeralContainers(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	port := framework.FreePort(t)
	framework.StartNodelet(t, rt,
		"--kubeconfig", cluster.NodeKubeconfig,
		"--client-ca-file", cluster.CAFile,
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", strconv.Itoa(port),
	)
	cpWaitNode(t, admin)

	const pod = "debugme"
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "exec sleep 3601"]
`, pod, framework.NodeName)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cpWaitPod(t, admin, pod, 90*time.Second, "running", cpRunningInAPI)

	// kubectl debug, not interactive: it adds the container through the
	// subresource and returns.
	if out, err := cluster.Kubectl("debug", pod, "--image=busybox:1.35", "--target=app", "-c", "peek",
		"--", "sh", "-c", "ps; echo peek-done"); err != nil {
		t.Fatalf("kubectl debug: %v: %s", err, out)
	}
	p := cpWaitPod(t, admin, pod, 60*time.Second, "peek terminated", func(p *v1.Pod) bool {
		s := framework.EphemeralContainerStatus(p, "peek")
		return s != nil && s.State.Terminated != nil
	})
	peek := framework.EphemeralContainerStatus(p, "peek")
	if term := peek.State.Terminated; term.ExitCode != 0 || !strings.HasPrefix(peek.ContainerID, "containerd://") ||
		peek.ImageID == "" || peek.Image == "" || peek.RestartCount != 0 || peek.Ready {
		t.Errorf("peek status %+v", peek)
	}
	if out, err := cluster.Kubectl("logs", pod, "-c", "peek"); err != nil || !strings.Contains(out, "sleep 3601") || !strings.Contains(out, "peek-done") {
		t.Errorf("kubectl logs -c peek: %v: %q, want the target's `sleep 3601` in its ps", err, out)
	}

	// Through client-go's UpdateEphemeralContainers: no target, so a
	// process namespace of its own; env as for any container.
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "own", Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent,
		Env:                      []v1.EnvVar{{Name: "GREETING", Value: "hello-from-env"}},
		Command:                  []string{"sh", "-c", "echo $GREETING; ps"},
		TerminationMessagePolicy: v1.TerminationMessageReadFile,
	}})
	if _, err := admin.CoreV1().Pods("default").UpdateEphemeralContainers(context.Background(), pod, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateEphemeralContainers: %v", err)
	}
	p = cpWaitPod(t, admin, pod, 60*time.Second, "own terminated", func(p *v1.Pod) bool {
		s := framework.EphemeralContainerStatus(p, "own")
		return s != nil && s.State.Terminated != nil
	})
	if out, err := cluster.Kubectl("logs", pod, "-c", "own"); err != nil || !strings.Contains(out, "hello-from-env") || strings.Contains(out, "sleep 3601") {
		t.Errorf("kubectl logs -c own: %v: %q, want the variable and no `sleep 3601` (own process namespace)", err, out)
	}
	// The pod was synced after own was added, long after peek exited: peek
	// is still the one instance that ran.
	if again := framework.EphemeralContainerStatus(p, "peek"); again.State.Terminated == nil || again.ContainerID != peek.ContainerID || again.RestartCount != 0 {
		t.Errorf("peek after exiting: %+v, want the same terminated instance %s", again, peek.ContainerID)
	}
	if n := runtimeInstances(t, rt, "peek"); n != 1 {
		t.Errorf("%d instances of peek in the runtime, want 1 (never restarted)", n)
	}
	if app := framework.ContainerStatus(p, "app"); app.State.Running == nil || app.RestartCount != 0 || p.Status.Phase != v1.PodRunning {
		t.Errorf("app %+v, phase %s: the debuggers must leave it alone", app, p.Status.Phase)
	}

	// kubectl debug -i waits for the container and attaches to it.
	shellSays(t, cluster, "echo got:$((40+2))", "got:42",
		"debug", "-i", pod, "--image=busybox:1.35", "--target=app", "-c", "shell", "--", "sh")
	// ... and kubectl attach finds it by name afterwards.
	shellSays(t, cluster, "echo again:$((1+1)); ps", "sleep 3601", "attach", "-i", pod, "-c", "shell")
	p = cpWaitPod(t, admin, pod, 10*time.Second, "shell running", func(p *v1.Pod) bool {
		s := framework.EphemeralContainerStatus(p, "shell")
		return s != nil && s.State.Running != nil
	})
	shellID := strings.TrimPrefix(framework.EphemeralContainerStatus(p, "shell").ContainerID, "containerd://")

	if out, err := cluster.Kubectl("delete", "pod", pod, "--wait=true", "--timeout=60s"); err != nil {
		t.Fatalf("kubectl delete: %v: %s", err, out)
	}
	out, err := rt.Ctr("tasks", "ls")
	if err != nil {
		t.Fatalf("ctr tasks ls: %v", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == shellID && f[2] == "RUNNING" {
			t.Errorf("shell still runs after the pod was deleted: %s", line)
		}
	}
}

// shellSays runs a streaming kubectl command (debug -i, attach -i), types
// input into it until its output shows want, then ends it.
func shellSays(t *testing.T, cluster *framework.Cluster, input, want string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := kubectlCmd(ctx, cluster, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &watchBuffer{want: want, found: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Typed again until answered: what is typed before the attach is
	// established is lost.
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			io.WriteString(stdin, input+"\n")
			select {
			case <-ctx.Done():
				return
			case <-out.found:
				return
			case <-tick.C:
			}
		}
	}()
	select {
	case <-out.found:
	case <-ctx.Done():
		t.Errorf("kubectl %s: no %q in %q", strings.Join(args, " "), want, out.String())
	}
	cancel()
	_ = cmd.Wait()
}

// runtimeInstances counts the containers named name in the runtime.
func runtimeInstances(t *testing.T, rt *framework.Runtime, name string) int {
	t.Helper()
	var out string
	poll.Within(t, 10*time.Second, "ctr containers ls", func() (bool, string) {
		var err error
		out, err = rt.Ctr("containers", "ls", "-q", `labels."io.kubernetes.container.name"==`+name)
		return err == nil, fmt.Sprint(err)
	})
	return len(strings.Fields(out))
}
