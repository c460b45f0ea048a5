//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestSidecarsInNeverPod: in a restartPolicy Never pod, sidecars start in
// order before the init container after them and the app; a sidecar that
// exits is restarted; once the app completes the pod is Succeeded and its
// sidecars are stopped after it, in reverse order.
func TestSidecarsInNeverPod(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	dir := t.TempDir()
	order := filepath.Join(dir, "order")

	sidecar := func(name, crash string) string {
		return fmt.Sprintf(`  - name: %s
    image: busybox:1.35
    restartPolicy: Always
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle:
      preStop: {exec: {command: ["sh", "-c", "echo %s-prestop >> /out/order"]}}
    command: ["sh", "-c", %q]
`, name, name, "echo "+name+"-start >> /out/order; trap 'echo "+name+"-term >> /out/order; exit 0' TERM; "+
			"while true; do "+crash+"sleep 0.1; done")
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sidecars
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 10
  volumes:
  - name: out
    hostPath: {path: %s, type: DirectoryOrCreate}
  initContainers:
%s  - name: init
    image: busybox:1.35
    volumeMounts: [{name: out, mountPath: /out}]
    command: ["sh", "-c", "echo init >> /out/order"]
%s  containers:
  - name: app
    image: busybox:1.35
    volumeMounts: [{name: out, mountPath: /out}]
    command: ["sh", "-c", "echo app >> /out/order; while [ ! -f /out/done ]; do sleep 0.1; done; echo app-exit >> /out/order"]
`, dir,
		sidecar("side1", "if [ -f /out/crash ] && [ ! -f /out/crashed ]; then touch /out/crashed; exit 1; fi; "),
		sidecar("side2", ""))
	n.WriteManifest("sidecars.yaml", manifest)

	name := "sidecars" + staticSuffix
	p := n.WaitPod(name, 90*time.Second, "app running", framework.Running)
	got := waitFile(t, order, 30*time.Second, "app started", func(s string) bool { return strings.Contains(s, "app\n") })
	if want := "side1-start\ninit\nside2-start\napp\n"; got != want {
		t.Errorf("start order %q, want %q", got, want)
	}
	for _, s := range []string{"side1", "side2"} {
		st := framework.InitContainerStatus(p, s)
		if st == nil || st.State.Running == nil || st.Started == nil || !*st.Started {
			t.Errorf("sidecar %s status %+v, want running and started", s, st)
		}
	}
	// The init container that completed is ready, as upstream reports it.
	if st := framework.InitContainerStatus(p, "init"); st == nil || st.State.Terminated == nil || !st.Ready {
		t.Errorf("init container status %+v, want terminated and ready", st)
	}

	// A sidecar that exits is restarted, though the pod's policy is Never.
	if err := os.WriteFile(filepath.Join(dir, "crash"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p = n.WaitPod(name, 60*time.Second, "side1 restarted", func(p *v1.Pod) bool {
		st := framework.InitContainerStatus(p, "side1")
		return st != nil && st.RestartCount == 1 && st.State.Running != nil
	})
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s while the app runs", p.Status.Phase)
	}

	// The app completes: the pod is Succeeded, the sidecars are stopped
	// after it, side2 before side1.
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n.WaitPod(name, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodSucceeded })
	got = waitFile(t, order, 60*time.Second, "sidecars stopped", func(s string) bool {
		return strings.Contains(s, "side1-term") && strings.Contains(s, "side2-term")
	})
	// Both preStop hooks run at once when the pod stops; each sidecar's
	// stop signal waits for its turn: side2, then side1.
	tail := got[strings.Index(got, "app-exit\n"):]
	at := func(line string) int { return strings.Index(tail, line+"\n") }
	if at("side2-term") < 0 || at("side1-term") < at("side2-term") ||
		at("side1-prestop") < 0 || at("side1-prestop") > at("side1-term") ||
		at("side2-prestop") < 0 || at("side2-prestop") > at("side2-term") {
		t.Errorf("stop order %q: want each preStop before its sidecar's stop, side2 stopped before side1", tail)
	}
	p = n.WaitPod(name, 30*time.Second, "sidecars terminated in status", func(p *v1.Pod) bool {
		a, b := framework.InitContainerStatus(p, "side1"), framework.InitContainerStatus(p, "side2")
		return a != nil && b != nil && a.State.Terminated != nil && b.State.Terminated != nil
	})
	if p.Status.Phase != v1.PodSucceeded {
		t.Errorf("phase %s after the sidecars stopped", p.Status.Phase)
	}
}

// TestInitContainerWaitingStatus: while an init container runs, the
// containers after it wait with PodInitializing (started: false, never
// unset) and the Initialized
// condition names the init containers not done, as upstream reports them.
func TestInitContainerWaitingStatus(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	n.WriteManifest("initwait.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: initwait
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: wait
    image: busybox:1.35
    command: ["sleep", "3600"]
  - name: after
    image: busybox:1.35
    command: ["true"]
  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
`)
	p := n.WaitPod("initwait"+staticSuffix, 60*time.Second, "init container wait running", func(p *v1.Pod) bool {
		st := framework.InitContainerStatus(p, "wait")
		return st != nil && st.State.Running != nil
	})
	for _, st := range []*v1.ContainerStatus{framework.InitContainerStatus(p, "after"), framework.ContainerStatus(p, "app")} {
		if st == nil || st.State.Waiting == nil || st.State.Waiting.Reason != "PodInitializing" || st.Started == nil || *st.Started {
			t.Errorf("status %+v, want waiting PodInitializing, started false", st)
		}
	}
	var initialized *v1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodInitialized {
			initialized = &p.Status.Conditions[i]
		}
	}
	if initialized == nil || initialized.Status != v1.ConditionFalse || initialized.Reason != "ContainersNotInitialized" ||
		initialized.Message != "containers with incomplete status: [wait after]" {
		t.Errorf("Initialized condition %+v, want False, ContainersNotInitialized, containers with incomplete status: [wait after]", initialized)
	}
}
