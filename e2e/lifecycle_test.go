//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// hookPod is a host-network pod with one container "app" running script,
// the given lifecycle block (YAML under "lifecycle:", indented 6) and the
// host directory dir mounted at /out.
func hookPod(name, dir, script, lifecycle string, grace int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: %d
  volumes:
  - name: out
    hostPath: {path: %s, type: DirectoryOrCreate}
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", %q]
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle:
%s`, name, grace, dir, script, lifecycle)
}

func readOut(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func waitFile(t *testing.T, path string, timeout time.Duration, what string, cond func(string) bool) string {
	t.Helper()
	var s string
	poll.Until(t, timeout, 50*time.Millisecond, path+": "+what, func() (bool, string) {
		s = readOut(t, path)
		return cond(s), fmt.Sprintf("content %q", s)
	})
	return s
}

// TestLifecycleHooks: postStart runs before the container counts as running
// and its effect is seen by the main process; a failing postStart kills and
// restarts the container; exec, httpGet and sleep preStop hooks run before
// the stop signal.
func TestLifecycleHooks(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	dir := t.TempDir()

	// The httpGet preStop target: the test's own server on loopback, which
	// writes to the same file the container's TERM trap appends to.
	httpOrder := filepath.Join(dir, "http", "order")
	if err := os.MkdirAll(filepath.Dir(httpOrder), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/prestop" && r.Header.Get("X-Hook") == "yes" {
			f, err := os.OpenFile(httpOrder, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				_, _ = f.WriteString("prestop\n")
				f.Close()
			}
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	trap := "trap 'echo term >> /out/order; exit 0' TERM; while true; do sleep 0.1; done"
	pods := map[string]string{
		"poststart": hookPod("poststart", filepath.Join(dir, "poststart"),
			"while [ ! -f /out/hook ]; do sleep 0.1; done; cat /out/hook > /out/seen; "+trap,
			`      postStart: {exec: {command: ["sh", "-c", "echo from-hook > /out/hook"]}}
`, 5),
		"failhook": hookPod("failhook", filepath.Join(dir, "failhook"), "sleep 3600",
			`      postStart: {exec: {command: ["sh", "-c", "exit 3"]}}
`, 2),
		"prestop-exec": hookPod("prestop-exec", filepath.Join(dir, "exec"), trap,
			`      preStop: {exec: {command: ["sh", "-c", "echo prestop >> /out/order"]}}
`, 20),
		"prestop-http": hookPod("prestop-http", filepath.Join(dir, "http"), trap,
			`      preStop: {httpGet: {host: 127.0.0.1, port: `+port+`, path: /prestop, httpHeaders: [{name: X-Hook, value: "yes"}]}}
`, 20),
		"hanghook": hookPod("hanghook", filepath.Join(dir, "hang"), "echo up > /out/started; sleep 3600",
			`      postStart: {exec: {command: ["sleep", "3600"]}}
`, 2),
		"prestop-sleep": hookPod("prestop-sleep", filepath.Join(dir, "sleep"),
			"trap 'date +%s > /out/term; exit 0' TERM; while true; do sleep 0.1; done",
			`      preStop: {sleep: {seconds: 3}}
`, 20),
	}
	for name, m := range pods {
		n.WriteManifest(name+".yaml", m)
	}

	// postStart: the main process saw what the hook wrote, and the pod is
	// reported running.
	p := n.WaitPod("poststart"+staticSuffix, 60*time.Second, "running", framework.Running)
	if got := waitFile(t, filepath.Join(dir, "poststart", "seen"), 30*time.Second, "main saw the hook's file",
		func(s string) bool { return s != "" }); got != "from-hook\n" {
		t.Errorf("main process read %q", got)
	}
	if c := framework.ContainerStatus(p, "app"); c.RestartCount != 0 {
		t.Errorf("poststart container restarted %d times", c.RestartCount)
	}
	if !hasCondition(p, v1.PodReadyToStartContainers) {
		t.Errorf("PodReadyToStartContainers not true: %+v", p.Status.Conditions)
	}

	// A failing postStart: FailedPostStartHook, the container is killed and
	// restarted (restartPolicy Always).
	n.WaitPod("failhook"+staticSuffix, 90*time.Second, "restarted after failed postStart", func(p *v1.Pod) bool {
		c := framework.ContainerStatus(p, "app")
		return c != nil && c.RestartCount >= 1
	})
	if log := n.Log(); !strings.Contains(log, "FailedPostStartHook") || !strings.Contains(log, "PostStartHook failed") {
		t.Errorf("no FailedPostStartHook event in the log")
	}

	for _, name := range []string{"prestop-exec", "prestop-http", "prestop-sleep"} {
		n.WaitPod(name+staticSuffix, 60*time.Second, "running", framework.Running)
	}
	removed := time.Now()
	for _, name := range []string{"prestop-exec", "prestop-http", "prestop-sleep", "poststart"} {
		n.RemoveManifest(name + ".yaml")
	}
	for _, sub := range []string{"exec", "http"} {
		got := waitFile(t, filepath.Join(dir, sub, "order"), 60*time.Second, "the TERM trap ran",
			func(s string) bool { return strings.Contains(s, "term") })
		if got != "prestop\nterm\n" {
			t.Errorf("%s preStop: order %q, want the hook before the stop signal", sub, got)
		}
	}
	// The sleep hook holds the stop signal back for its 3 s.
	term := waitFile(t, filepath.Join(dir, "sleep", "term"), 60*time.Second, "the TERM trap ran",
		func(s string) bool { return s != "" })
	secs, err := strconv.ParseInt(strings.TrimSpace(term), 10, 64)
	if err != nil {
		t.Fatalf("term time %q: %v", term, err)
	}
	if d := time.Unix(secs+1, 0).Sub(removed); d < 3*time.Second {
		t.Errorf("SIGTERM %s after removal, before the 3 s preStop sleep ended", d)
	}
	// A postStart hook that never returns: the container is not reported
	// running, and removing the pod does not wait for the hook.
	waitFile(t, filepath.Join(dir, "hang", "started"), 60*time.Second, "hanghook's main process started",
		func(s string) bool { return s != "" })
	hp, err := n.Pod("hanghook" + staticSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if c := framework.ContainerStatus(hp, "app"); c != nil && c.State.Running != nil {
		t.Errorf("container reported running while its postStart hook runs: %+v", c.State)
	}
	n.RemoveManifest("hanghook.yaml")
	n.WaitPod("hanghook"+staticSuffix, 60*time.Second, "pod gone while its postStart hook hangs", func(p *v1.Pod) bool { return p == nil })

	// Stopping a pod without a preStop hook still works: poststart's trap.
	waitFile(t, filepath.Join(dir, "poststart", "order"), 60*time.Second, "poststart stopped",
		func(s string) bool { return s == "term\n" })
}

func hasCondition(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
