//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// The fault suite: each test injects a fault a node sees in production
// (the agent crashing, the runtime restarting, the API server away, a full
// disk) and checks what survived. CI runs the short form; `make faults`
// (NODELET_FAULTS_FULL=1) the sizes and durations docs/RELIABILITY.md names.

// faultScale returns short in the CI form and full under NODELET_FAULTS_FULL=1.
func faultScale[T any](short, full T) T {
	if os.Getenv("NODELET_FAULTS_FULL") == "1" {
		return full
	}
	return short
}

// netPodManifest is a bridge-networked static pod (it holds a pod IP) that
// sleeps until it is stopped.
func netPodManifest(name string, grace int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
`, name, grace)
}

// runtimeTruth is what the runtime holds for a set of pods.
type runtimeTruth struct {
	readySandboxes map[string][]string // pod UID -> IDs of its ready sandboxes
	allSandboxes   map[string]bool     // every sandbox ID, any state
	running        map[string]int      // "uid/container" -> running instances
	started        map[string]int      // "uid/container" -> instances that were ever started
}

func readRuntime(t *testing.T, c *cri.Client) runtimeTruth {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatalf("list sandboxes: %v", err)
	}
	ctrs, err := c.ListContainers(ctx, nil)
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	rt := runtimeTruth{readySandboxes: map[string][]string{}, allSandboxes: map[string]bool{}, running: map[string]int{}, started: map[string]int{}}
	for _, sb := range sbs {
		rt.allSandboxes[sb.Id] = true
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			uid := sb.Labels[cri.LabelPodUID]
			rt.readySandboxes[uid] = append(rt.readySandboxes[uid], sb.Id)
		}
	}
	for _, ctr := range ctrs {
		key := ctr.Labels[cri.LabelPodUID] + "/" + ctr.Labels[cri.LabelContainerName]
		if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			rt.running[key]++
		}
		if ctr.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			continue
		}
		if st, err := c.ContainerStatus(ctx, ctr.Id, false); err == nil && st.GetStartedAt() > 0 {
			rt.started[key]++
		}
	}
	return rt
}

// waitAllRunning waits until nodelet reports every named static pod running
// and returns them by name.
func waitAllRunning(t *testing.T, n *framework.Nodelet, names []string, timeout time.Duration) map[string]v1.Pod {
	t.Helper()
	out := map[string]v1.Pod{}
	poll.Until(t, timeout, 200*time.Millisecond, fmt.Sprintf("%d pods running", len(names)), func() (bool, string) {
		pods, err := n.Pods()
		if err != nil {
			return false, err.Error()
		}
		byName := map[string]v1.Pod{}
		for _, p := range pods {
			byName[p.Name] = p
		}
		var missing []string
		for _, name := range names {
			p, ok := byName[name]
			if !ok || !framework.Running(&p) {
				missing = append(missing, name)
				continue
			}
			out[name] = p
		}
		return len(missing) == 0, fmt.Sprintf("not running: %v", missing)
	})
	return out
}

// newReservations are the IP reservations taken by sandboxes of the test's
// runtime since before, by IP. Other runtimes on the host share the IPAM
// store; their reservations are not counted.
func newReservations(t *testing.T, rt *framework.Runtime, before map[string]string) map[string]string {
	t.Helper()
	now, err := rt.IPReservations()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for ip, owner := range now {
		if old, ok := before[ip]; !ok || old != owner {
			out[ip] = owner
		}
	}
	return out
}

// checkOnePerPod checks that each pod has exactly one ready sandbox, one
// running instance of each container and kept its restart counts at 0,
// and that every pod IP taken since before is held by one of those
// sandboxes (none leaked by an interrupted set-up).
func checkOnePerPod(t *testing.T, rt *framework.Runtime, c *cri.Client, pods map[string]v1.Pod, before map[string]string) {
	t.Helper()
	truth := readRuntime(t, c)
	ours := map[string]bool{}
	for name, p := range pods {
		uid := string(p.UID)
		if got := len(truth.readySandboxes[uid]); got != 1 {
			t.Errorf("%s: %d ready sandboxes, want 1", name, got)
		}
		for _, id := range truth.readySandboxes[uid] {
			ours[id] = true
		}
		for _, cs := range p.Status.ContainerStatuses {
			if got := truth.running[uid+"/"+cs.Name]; got != 1 {
				t.Errorf("%s/%s: %d running instances, want 1", name, cs.Name, got)
			}
			if got := truth.started[uid+"/"+cs.Name]; got != 1 {
				t.Errorf("%s/%s: %d instances ever started, want 1 (restart count %d)", name, cs.Name, got, cs.RestartCount)
			} else if cs.RestartCount != 0 {
				// As upstream: an instance created but not started when
				// the agent died is replaced, and the new one numbered
				// after it.
				t.Logf("%s/%s: restart count %d, one instance started", name, cs.Name, cs.RestartCount)
			}
		}
	}
	// An interrupted set-up may leave a reservation until the runtime or
	// nodelet tears the half-made sandbox down: wait for that.
	poll.Until(t, 2*time.Minute, 500*time.Millisecond, "pod IP reservations held only by the pods' sandboxes", func() (bool, string) {
		var leaked []string
		for ip, owner := range newReservations(t, rt, before) {
			if !ours[owner] {
				leaked = append(leaked, ip+" by "+owner)
			}
		}
		sort.Strings(leaked)
		return len(leaked) == 0, fmt.Sprintf("leaked: %v", leaked)
	})
	if got := len(newReservations(t, rt, before)); got != len(pods) {
		t.Errorf("%d new IP reservations for %d pods", got, len(pods))
	}
}

// TestFaultNodeletKilledDuringBurst: nodelet is SIGKILLed while it starts a
// burst of bridge-networked pods, then started again. Every pod ends up
// with exactly one sandbox and one instance of its container, and no pod IP
// is left reserved by a sandbox set-up the crash interrupted.
func TestFaultNodeletKilledDuringBurst(t *testing.T) {
	count := faultScale(20, 50)
	rt := framework.StartRuntime(t)
	client := framework.CRIClient(t, rt)
	n := framework.StartNodelet(t, rt)
	before, err := rt.IPReservations()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range count {
		name := fmt.Sprintf("burst-%02d", i)
		n.WriteManifest(name+".yaml", netPodManifest(name, 5))
		names = append(names, name+staticSuffix)
	}
	// Crash in the middle: some sandboxes made, others still to come.
	poll.Until(t, 3*time.Minute, 20*time.Millisecond, "a quarter of the sandboxes created", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sbs, err := client.ListPodSandbox(ctx, nil)
		return err == nil && len(sbs) >= count/4, fmt.Sprintf("%d sandboxes, err %v", len(sbs), err)
	})
	n.Kill()
	t.Logf("nodelet killed with %d sandboxes in the runtime", len(readRuntime(t, client).allSandboxes))
	n.Start()

	pods := waitAllRunning(t, n, names, 5*time.Minute)
	checkOnePerPod(t, rt, client, pods, before)
}

// TestFaultNodeletKilledDuringGracefulStop: a pod whose container ignores
// SIGTERM is removed; nodelet is SIGKILLed while it waits out the grace
// period, then started again. The stop completes (the container is killed,
// it does not run on until its own timer ends) and nothing of the pod stays.
func TestFaultNodeletKilledDuringGracefulStop(t *testing.T) {
	rt := framework.StartRuntime(t)
	client := framework.CRIClient(t, rt)
	n := framework.StartNodelet(t, rt)
	const grace = 10
	n.WriteManifest("slow.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: slow
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "trap 'echo got TERM' TERM; echo started; while true; do sleep 1; done"]
`, grace))
	p := n.WaitPod("slow"+staticSuffix, 60*time.Second, "running", framework.Running)
	uid := string(p.UID)
	logs, err := filepath.Glob(filepath.Join(n.LogDir, "*_slow"+staticSuffix+"_"+uid, "app", "0.log"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("container log of slow: %v %v", logs, err)
	}
	waitLog := func(what string) {
		poll.Until(t, 60*time.Second, 50*time.Millisecond, "container log says "+what, func() (bool, string) {
			b, _ := os.ReadFile(logs[0])
			return strings.Contains(string(b), what), string(b)
		})
	}
	waitLog("started")

	removed := time.Now()
	n.RemoveManifest("slow.yaml")
	waitLog("got TERM")
	n.Kill()
	n.Start()

	poll.Until(t, 2*time.Minute, 100*time.Millisecond, "the interrupted stop completed", func() (bool, string) {
		truth := readRuntime(t, client)
		return truth.running[uid+"/app"] == 0 && len(truth.readySandboxes[uid]) == 0,
			fmt.Sprintf("running %d, ready sandboxes %d", truth.running[uid+"/app"], len(truth.readySandboxes[uid]))
	})
	t.Logf("MEASURE removal -> stop completed across a crash: %s (grace %d s)", time.Since(removed).Round(time.Millisecond), grace)
	// The pod's sandbox and containers are removed, not only stopped.
	poll.Until(t, 2*time.Minute, 200*time.Millisecond, "the pod's sandboxes removed", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sbs, err := client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.LabelPodUID: uid}})
		return err == nil && len(sbs) == 0, fmt.Sprintf("%d sandboxes, err %v", len(sbs), err)
	})
}

// TestFaultContainerdRestart: containerd is stopped (SIGTERM, then in a
// second round SIGKILL) under running pods and started again. The Node's
// Ready condition goes False while the runtime is away and comes back;
// nodelet reconnects by itself, restarts no container, and starts a new
// pod afterwards.
func TestFaultContainerdRestart(t *testing.T) {
	count := faultScale(8, 30)
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig, "--node-status-update-frequency", "2s")
	cpWaitNode(t, admin)
	var names []string
	for i := range count {
		name := fmt.Sprintf("keep-%02d", i)
		n.WriteManifest(name+".yaml", netPodManifest(name, 5))
		names = append(names, name+staticSuffix)
	}
	before := waitAllRunning(t, n, names, 5*time.Minute)

	nodeReadyIs := func(want v1.ConditionStatus) {
		t.Helper()
		poll.Until(t, 2*time.Minute, 200*time.Millisecond, "Node Ready "+string(want), func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			node, err := admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range node.Status.Conditions {
				if c.Type == v1.NodeReady {
					return c.Status == want, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
				}
			}
			return false, "no Ready condition"
		})
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := rt.StopContainerd(sig); err != nil {
			t.Fatal(err)
		}
		nodeReadyIs(v1.ConditionFalse)
		if err := rt.RestartContainerd(); err != nil {
			t.Fatal(err)
		}
		nodeReadyIs(v1.ConditionTrue)
		after := waitAllRunning(t, n, names, 2*time.Minute)
		for name, old := range before {
			for _, oc := range old.Status.ContainerStatuses {
				nc := framework.ContainerStatus(ptr.To(after[name]), oc.Name)
				if nc == nil || nc.ContainerID != oc.ContainerID || nc.RestartCount != oc.RestartCount {
					t.Errorf("after containerd %v: %s/%s was %s (restarts %d), now %+v", sig, name, oc.Name, oc.ContainerID, oc.RestartCount, nc)
				}
			}
		}
	}
	if n.Pid() == 0 {
		t.Fatal("nodelet exited with the runtime")
	}
	n.WriteManifest("later.yaml", netPodManifest("later", 5))
	n.WaitPod("later"+staticSuffix, 2*time.Minute, "a new pod running after the restarts", framework.Running)
}

// TestFaultAPIServerOutage: the API server is unreachable from the node
// (every connection cut) with API and static pods running; meanwhile an API
// pod is deleted. Nothing is killed during the outage; once the API server
// is back, the Lease is renewed, the statuses are current, and the pod
// deleted during the outage is stopped and its object removed.
func TestFaultAPIServerOutage(t *testing.T) {
	outage := faultScale(30*time.Second, 5*time.Minute)
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := kubeClient(t, cluster.AdminKubeconfig)
	proxy := startNodeProxy(t, strings.TrimPrefix(cluster.Server, "https://"))
	proxy.setUp(true)
	kubeconfig := filepath.Join(t.TempDir(), "node-via-proxy.kubeconfig")
	raw, err := os.ReadFile(cluster.NodeKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, []byte(strings.ReplaceAll(string(raw), cluster.Server, "https://"+proxy.addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	n := framework.NewNodelet(t, rt, "--kubeconfig", kubeconfig, "--node-ip", "127.0.0.1")
	n.WriteManifest("static.yaml", netPodManifest("static", 5))
	n.Start()
	cpWaitNode(t, admin)
	for _, name := range []string{"stays", "deleted"} {
		if _, err := cluster.KubectlInput(cpPodYAML(name, "sleep 3600", 5), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]*v1.Pod{}
	for _, name := range []string{"stays", "deleted"} {
		before[name] = cpWaitPod(t, admin, name, 2*time.Minute, "running in the API", cpRunningInAPI)
	}
	before["static"] = n.WaitPod("static"+staticSuffix, time.Minute, "running", framework.Running)

	proxy.setUp(false)
	cut := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), outage+5*time.Minute)
	defer cancel()
	if err := admin.CoreV1().Pods("default").Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Nothing is killed while the API server is away, whatever the outage's
	// length: checked all along it.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ; time.Since(cut) < outage; <-tick.C {
		for name, old := range before {
			podName := name
			if name == "static" {
				podName = "static" + staticSuffix
			}
			p, err := n.Pod(podName)
			if err != nil || !framework.Running(p) || p.Status.ContainerStatuses[0].ContainerID != old.Status.ContainerStatuses[0].ContainerID {
				t.Fatalf("%s during the outage (%s in): %v, err %v", name, time.Since(cut).Round(time.Second), p, err)
			}
		}
	}

	proxy.setUp(true)
	restored := time.Now()
	poll.Until(t, time.Minute, 100*time.Millisecond, "the lease renewed after the outage", func() (bool, string) {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(restored), l.Spec.RenewTime.String()
	})
	t.Logf("MEASURE reachable again -> lease renewed: %s after a %s outage", time.Since(restored).Round(time.Millisecond), outage)
	cpWaitPod(t, admin, "deleted", 2*time.Minute, "stopped and removed once seen", func(p *v1.Pod) bool { return p == nil })
	t.Logf("MEASURE reachable again -> pod deleted during the outage gone: %s", time.Since(restored).Round(time.Millisecond))
	stays := cpWaitPod(t, admin, "stays", time.Minute, "running in the API", cpRunningInAPI)
	if got, want := stays.Status.ContainerStatuses[0].ContainerID, before["stays"].Status.ContainerStatuses[0].ContainerID; got != want {
		t.Errorf("stays: container %s after the outage, was %s", got, want)
	}
	mirror := cpWaitPod(t, admin, "static"+staticSuffix, time.Minute, "mirror pod running", cpRunningInAPI)
	if got, want := mirror.Status.ContainerStatuses[0].ContainerID, before["static"].Status.ContainerStatuses[0].ContainerID; got != want {
		t.Errorf("static: container %s after the outage, was %s", got, want)
	}
	if truth := readRuntime(t, framework.CRIClient(t, rt)); truth.running[string(before["deleted"].UID)+"/app"] != 0 {
		t.Errorf("the deleted pod's container still runs")
	}
}

// TestFaultRootDirFull: nodelet's root dir fills up. nodelet keeps serving
// and keeps its running pod; a new pod is refused with the reason (no space
// left) in its status; once space is freed, the new pod starts.
func TestFaultRootDirFull(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)
	// A small filesystem of its own, so that filling it touches nothing
	// else; the framework unmounts what is under the test's dir at the end.
	if err := syscall.Mount("tmpfs", n.RootDir, "tmpfs", 0, "size=4m,mode=0755"); err != nil {
		framework.RequireRealParts(t, "a tmpfs for the root dir", fmt.Errorf("%w: %v", framework.ErrUnsupported, err))
	}
	n.Start()
	n.WriteManifest("before.yaml", netPodManifest("before", 5))
	old := n.WaitPod("before"+staticSuffix, time.Minute, "running", framework.Running)

	filler := filepath.Join(n.RootDir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !strings.Contains(err.Error(), "no space left") {
				t.Fatalf("filling the root dir: %v", err)
			}
			break
		}
	}
	f.Close()

	n.WriteManifest("after.yaml", netPodManifest("after", 5))
	n.WaitPod("after"+staticSuffix, 2*time.Minute, "refused with the reason", func(p *v1.Pod) bool {
		return p != nil && !framework.Running(p) && strings.Contains(fmt.Sprintf("%+v", p.Status), "no space left on device")
	})
	if code, body, err := n.Readyz(); err != nil || code != 200 {
		t.Errorf("readyz with a full root dir: %d %s %v", code, body, err)
	}
	if p, err := n.Pod("before" + staticSuffix); err != nil || !framework.Running(p) ||
		p.Status.ContainerStatuses[0].ContainerID != old.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("running pod with a full root dir: %v %v", p, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	n.WaitPod("after"+staticSuffix, 2*time.Minute, "running once space is free", framework.Running)
}

// TestFaultRuntimeFilesystemFull: containerd's root (its metadata, images,
// snapshots, the CRI plugin's sandbox files) is on a small filesystem of
// its own, and it fills up. nodelet keeps serving (healthz, /pods) and keeps
// its running pod; the new pod fails with the reason where an operator
// looks (its status or nodelet's log); once space is freed it starts; and
// after containerd and nodelet are both restarted nothing written around
// the failure is trusted: one sandbox per pod, no container restarted.
func TestFaultRuntimeFilesystemFull(t *testing.T) {
	rt := framework.StartRuntimeOn(t, func(stateDir string) error {
		root := filepath.Join(stateDir, "root")
		if err := os.MkdirAll(root, 0o711); err != nil {
			return err
		}
		// A tmpfs needs no loop device or mkfs; 64 MiB holds the test
		// images and a few pods. Runtime tear-down unmounts everything
		// under the state dir, also when the test fails.
		if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=64m,mode=0711"); err != nil {
			return fmt.Errorf("%w: a tmpfs for containerd's root: %v", framework.ErrUnsupported, err)
		}
		return nil
	})
	client := framework.CRIClient(t, rt)
	n := framework.StartNodelet(t, rt)
	n.WriteManifest("before.yaml", netPodManifest("before", 5))
	old := n.WaitPod("before"+staticSuffix, time.Minute, "running", framework.Running)

	filler := filepath.Join(rt.StateDir, "root", "filler")
	fill(t, filler)
	logBefore := len(n.Log())

	n.WriteManifest("after.yaml", netPodManifest("after", 5))
	var reason string
	poll.Until(t, 2*time.Minute, 200*time.Millisecond, "the new pod refused with the reason", func() (bool, string) {
		p, err := n.Pod("after" + staticSuffix)
		if err != nil || p == nil {
			return false, fmt.Sprintf("%v %v", p, err)
		}
		if framework.Running(p) {
			t.Fatalf("after started on a full runtime filesystem")
		}
		if status := fmt.Sprintf("%+v", p.Status); strings.Contains(status, "no space left on device") {
			reason = "in its status: " + status
			return true, ""
		}
		log := n.Log()
		for _, line := range strings.Split(log[min(logBefore, len(log)):], "\n") {
			if strings.Contains(line, "no space left on device") {
				reason = "in nodelet's log: " + line
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", p.Status)
	})
	t.Logf("the new pod's reason, %.600s", reason)
	if code, body, err := n.Readyz(); err != nil || code != 200 {
		t.Errorf("readyz with a full runtime filesystem: %d %s %v", code, body, err)
	}
	if p, err := n.Pod("before" + staticSuffix); err != nil || !framework.Running(p) ||
		p.Status.ContainerStatuses[0].ContainerID != old.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("running pod with a full runtime filesystem: %v %v", p, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	n.WaitPod("after"+staticSuffix, 3*time.Minute, "running once space is free", framework.Running)

	// Whatever containerd and nodelet wrote while the disk was full must
	// not be taken for the truth after a restart of both.
	n.Kill()
	if err := rt.StopContainerd(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := rt.RestartContainerd(); err != nil {
		t.Fatal(err)
	}
	n.Start()
	pods := waitAllRunning(t, n, []string{"before" + staticSuffix, "after" + staticSuffix}, 2*time.Minute)
	if got := pods["before"+staticSuffix].Status.ContainerStatuses[0].ContainerID; got != old.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("before: container %s after the restarts, was %s", got, old.Status.ContainerStatuses[0].ContainerID)
	}
	truth := readRuntime(t, client)
	for name, p := range pods {
		if got := len(truth.readySandboxes[string(p.UID)]); got != 1 {
			t.Errorf("%s: %d ready sandboxes after the restarts, want 1", name, got)
		}
		if got := truth.running[string(p.UID)+"/app"]; got != 1 {
			t.Errorf("%s: %d running instances after the restarts, want 1", name, got)
		}
	}
}

// fill writes a file until its filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", path, err)
			}
			return
		}
	}
}
