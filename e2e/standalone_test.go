//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/podsync"
)

const staticSuffix = "-" + framework.NodeName

func podManifest(name string, containers ...string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 5
  containers:
%s`, name, strings.Join(containers, ""))
}

func container(name, script string) string {
	return fmt.Sprintf(`  - name: %s
    image: busybox:1.35
    command: ["sh", "-c", %q]
`, name, script)
}

func TestStaticPodAddEditOneContainerRemove(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)

	n.WriteManifest("web.yaml", podManifest("web", container("a", "sleep 3600"), container("b", "sleep 3600")))
	p := n.WaitPod("web"+staticSuffix, 60*time.Second, "both containers running", framework.Running)
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	for _, k := range []string{"kubernetes.io/config.source", "kubernetes.io/config.seen", "kubernetes.io/config.hash"} {
		if p.Annotations[k] == "" {
			t.Errorf("annotation %s missing: %v", k, p.Annotations)
		}
	}
	aID := framework.ContainerStatus(p, "a").ContainerID
	bID := framework.ContainerStatus(p, "b").ContainerID

	// Edit container b only: b restarts, a keeps running untouched.
	n.WriteManifest("web.yaml", podManifest("web", container("a", "sleep 3600"), container("b", "sleep 3601")))
	p = n.WaitPod("web"+staticSuffix, 60*time.Second, "container b replaced", func(p *v1.Pod) bool {
		b := framework.ContainerStatus(p, "b")
		return framework.Running(p) && b.ContainerID != bID
	})
	if got := framework.ContainerStatus(p, "a"); got.ContainerID != aID || got.RestartCount != 0 {
		t.Fatalf("container a was restarted: id %s -> %s, restarts %d", aID, got.ContainerID, got.RestartCount)
	}

	// Remove: the pod leaves /pods and its containers stop.
	uid := p.UID
	n.RemoveManifest("web.yaml")
	n.WaitPod("web"+staticSuffix, 30*time.Second, "pod gone", func(p *v1.Pod) bool { return p == nil })
	client := framework.CRIClient(t, rt)
	waitRuntime(t, client, uid, p.Name, 30*time.Second, "all containers exited", func(s *runtime.PodStatus) bool {
		for _, c := range s.Containers {
			if c.State == runtime.ContainerStateRunning {
				return false
			}
		}
		return true
	})
}

// TestGracefulStop checks that removal honours terminationGracePeriodSeconds:
// a container that traps SIGTERM and needs 3 s exits by itself (exit 0) after
// those 3 s; one that ignores SIGTERM is SIGKILLed (137) at its 2 s grace.
func TestGracefulStop(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	client := framework.CRIClient(t, rt)

	trap := `apiVersion: v1
kind: Pod
metadata:
  name: trapper
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "trap 'sleep 3; exit 0' TERM; while true; do sleep 0.1; done"]
`
	ignore := `apiVersion: v1
kind: Pod
metadata:
  name: ignorer
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.1; done"]
`
	n.WriteManifest("trapper.yaml", trap)
	n.WriteManifest("ignorer.yaml", ignore)
	tp := n.WaitPod("trapper"+staticSuffix, 60*time.Second, "running", framework.Running)
	ip := n.WaitPod("ignorer"+staticSuffix, 60*time.Second, "running", framework.Running)

	removed := time.Now()
	n.RemoveManifest("trapper.yaml")
	n.RemoveManifest("ignorer.yaml")

	var wg sync.WaitGroup
	check := func(p *v1.Pod, wantExit int32, minStop, maxStop time.Duration) {
		defer wg.Done()
		s := waitRuntime(t, client, p.UID, p.Name, 60*time.Second, "container exited", func(s *runtime.PodStatus) bool {
			c := s.LatestContainer("app")
			return c != nil && c.State == runtime.ContainerStateExited
		})
		c := s.LatestContainer("app")
		took := c.FinishedAt.Sub(removed)
		t.Logf("%s: exit %d after %s", p.Name, c.ExitCode, took.Round(10*time.Millisecond))
		if c.ExitCode != wantExit {
			t.Errorf("%s: exit code %d, want %d", p.Name, c.ExitCode, wantExit)
		}
		// Behaviour, not speed: it must not be stopped before its time, and
		// it must not be left running for the 30 s default either.
		if took < minStop || took > maxStop {
			t.Errorf("%s: stopped %s after removal, want between %s and %s", p.Name, took, minStop, maxStop)
		}
	}
	wg.Add(2)
	go check(tp, 0, 3*time.Second, 15*time.Second)
	go check(ip, 137, 2*time.Second, 15*time.Second)
	wg.Wait()
}

func TestEmptyManifestDirBecomesReady(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	poll.Until(t, 30*time.Second, 50*time.Millisecond, "ready", func() (bool, string) {
		code, body, err := n.Readyz()
		return err == nil && code == http.StatusOK && strings.Contains(body, "[+]sources ok"), fmt.Sprintf("%d %q %v", code, body, err)
	})
	pods, err := n.Pods()
	if err != nil || len(pods) != 0 {
		t.Fatalf("pods %v err %v", pods, err)
	}
}

func TestBrokenManifestsBesideGoodOnes(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)

	n.WriteManifest("good.yaml", podManifest("good", container("app", "sleep 3600")))
	n.WriteManifest("bad-yaml.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n  spec: [\n")
	n.WriteManifest("wrong-kind.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
	n.WriteManifest("dup.yaml", podManifest("dup", container("app", "true"), container("app", "true")))
	n.WriteManifest("noimage.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: noimage}\nspec:\n  containers:\n  - name: app\n")
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(filepath.Join(n.ManifestDir, "garbage.json"), garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(n.ManifestDir, "huge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	// Files that are not manifests are never read.
	n.WriteManifest("good.yaml.backup", podManifest("backup", container("app", "sleep 3600")))
	n.WriteManifest(".good.yaml.swp", podManifest("swap", container("app", "sleep 3600")))

	n.Start()
	n.WaitPod("good"+staticSuffix, 60*time.Second, "running", framework.Running)

	// Every broken file is reported with a specific error; nothing else runs.
	want := map[string]string{
		"bad-yaml.yaml":   "yaml",
		"wrong-kind.yaml": "Deployment",
		"dup.yaml":        "Duplicate value",
		"noimage.yaml":    "image",
		"garbage.json":    "garbage.json",
		"huge.yaml":       "huge.yaml",
	}
	poll.Until(t, 20*time.Second, 100*time.Millisecond, "a specific error in the log for every broken file", func() (bool, string) {
		log := n.Log()
		var missing []string
		for file, needle := range want {
			if line := logLineAbout(log, file); line == "" || !strings.Contains(line, needle) {
				missing = append(missing, fmt.Sprintf("%s (want a line containing %q)", file, needle))
			}
		}
		slices.Sort(missing)
		return len(missing) == 0, "none for " + strings.Join(missing, ", ")
	})
	pods, err := n.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		t.Fatalf("want only the good pod, got %v", names)
	}
}

func logLineAbout(log, file string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, file) && (strings.Contains(l, "err") || strings.Contains(l, "E1") || strings.Contains(l, "E0")) {
			return l
		}
	}
	return ""
}

func TestManifestURLSource(t *testing.T) {
	rt := framework.StartRuntime(t)
	var mu sync.Mutex
	body := podListYAML("urlpod", "sleep 3600")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "yes" {
			http.Error(w, "missing header", http.StatusForbidden)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	set := func(b string) { mu.Lock(); body = b; mu.Unlock() }

	n := framework.StartNodelet(t, rt, "--manifest-url", srv.URL, "--manifest-url-header", "X-Test:yes", "--http-check-frequency", "1s")
	p := n.WaitPod("urlpod"+staticSuffix, 60*time.Second, "running", framework.Running)
	if p.Annotations["kubernetes.io/config.source"] != "http" {
		t.Fatalf("source annotation %q", p.Annotations["kubernetes.io/config.source"])
	}
	id := framework.ContainerStatus(p, "app").ContainerID

	set(podListYAML("urlpod", "sleep 3601"))
	n.WaitPod("urlpod"+staticSuffix, 60*time.Second, "container replaced", func(p *v1.Pod) bool {
		return framework.Running(p) && framework.ContainerStatus(p, "app").ContainerID != id
	})

	set("apiVersion: v1\nkind: PodList\nitems: []\n")
	n.WaitPod("urlpod"+staticSuffix, 60*time.Second, "pod removed", func(p *v1.Pod) bool { return p == nil })
}

func podListYAML(name, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PodList
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: %s
  spec:
    hostNetwork: true
    terminationGracePeriodSeconds: 1
    containers:
    - name: app
      image: busybox:1.35
      command: ["sh", "-c", %q]
`, name, script)
}

func TestCrashLoopBacksOff(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	n.WriteManifest("crash.yaml", podManifest("crash", container("app", "echo failing; exit 3")))

	p := n.WaitPod("crash"+staticSuffix, 60*time.Second, "CrashLoopBackOff", func(p *v1.Pod) bool {
		c := framework.ContainerStatus(p, "app")
		return c != nil && c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff"
	})
	c := framework.ContainerStatus(p, "app")
	if c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode != 3 {
		t.Fatalf("last termination %+v", c.LastTerminationState)
	}
	first, exited := c.RestartCount, c.LastTerminationState.Terminated.FinishedAt.Time
	// It restarts once the back-off expires, and not before: back-off starts
	// at 10 s and doubles, so the next instance starts at least 10 s after
	// the last one exited (the runtime's timestamps, to the second), where a
	// hot loop would start it at once.
	p = n.WaitPod("crash"+staticSuffix, 60*time.Second, "a restart after back-off", func(p *v1.Pod) bool {
		c := framework.ContainerStatus(p, "app")
		return c != nil && c.RestartCount > first
	})
	c = framework.ContainerStatus(p, "app")
	if c.RestartCount != first+1 {
		t.Fatalf("restart count went %d -> %d at once: not backing off", first, c.RestartCount)
	}
	var started time.Time
	switch {
	case c.State.Running != nil:
		started = c.State.Running.StartedAt.Time
	case c.State.Terminated != nil:
		started = c.State.Terminated.StartedAt.Time
	case c.LastTerminationState.Terminated != nil:
		started = c.LastTerminationState.Terminated.StartedAt.Time
	default:
		t.Fatalf("restarted container has no start time: %+v", c)
	}
	if gap := started.Sub(exited); gap < 9*time.Second {
		t.Fatalf("restarted %s after the exit: not backing off", gap)
	}
}

func TestRestartAdoptsRunningContainers(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)
	n.WriteManifest("keep.yaml", podManifest("keep", container("a", "sleep 3600"), container("b", "sleep 3600")))
	// Bridge-networked pod too: its sandbox must be adopted as well.
	n.WriteManifest("net.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: net
spec:
  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
`)
	before := map[string]v1.Pod{}
	for _, name := range []string{"keep", "net"} {
		p := n.WaitPod(name+staticSuffix, 60*time.Second, "running", framework.Running)
		before[name] = *p
	}
	if before["net"].Status.PodIP == "" {
		t.Fatalf("bridge pod has no IP")
	}

	n.Stop()
	n.Start()

	for name, old := range before {
		p := n.WaitPod(name+staticSuffix, 60*time.Second, "running after restart", framework.Running)
		for _, oc := range old.Status.ContainerStatuses {
			nc := framework.ContainerStatus(p, oc.Name)
			if nc.ContainerID != oc.ContainerID || nc.RestartCount != oc.RestartCount {
				t.Errorf("%s/%s: %s (restarts %d) -> %s (restarts %d)", name, oc.Name, oc.ContainerID, oc.RestartCount, nc.ContainerID, nc.RestartCount)
			}
		}
		if p.Status.PodIP != old.Status.PodIP {
			t.Errorf("%s: pod IP %s -> %s", name, old.Status.PodIP, p.Status.PodIP)
		}
	}
	// Later relists and syncs do not restart them either: a pod started
	// after them is seen running only after a relist that came later.
	n.WriteManifest("later.yaml", podManifest("later", container("app", "sleep 3600")))
	n.WaitPod("later"+staticSuffix, 60*time.Second, "running", framework.Running)
	for name, old := range before {
		p, _ := n.Pod(name + staticSuffix)
		for _, oc := range old.Status.ContainerStatuses {
			if nc := framework.ContainerStatus(p, oc.Name); nc == nil || nc.ContainerID != oc.ContainerID {
				t.Errorf("%s/%s replaced after restart", name, oc.Name)
			}
		}
	}
}

func waitRuntime(t *testing.T, c podsync.PodStateReader, uid types.UID, name string, timeout time.Duration, what string, cond func(*runtime.PodStatus) bool) *runtime.PodStatus {
	t.Helper()
	var s *runtime.PodStatus
	poll.Until(t, timeout, 50*time.Millisecond, "pod "+name+": "+what, func() (bool, string) {
		var err error
		s, err = podsync.ReadPodStatus(context.Background(), c, uid, name, "default")
		return err == nil && cond(s), fmt.Sprintf("err %v", err)
	})
	return s
}
