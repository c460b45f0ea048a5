//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// Taking a node over from the upstream kubelet, and back, without restarting
// anything (issue 16 item 4).
//
// What "no flicker" means here, precisely: from the moment the old agent is
// sent SIGTERM until the new agent has served every pod for a while, no
// watch event of any of the pods may show
//   - the pod deleted or re-created (another UID under the same name),
//   - a phase other than Running,
//   - a Ready or ContainersReady condition other than True,
//   - a container not running, or running under another container ID, or
//     with another restart count,
//   - other pod IPs (status.podIPs).
// The swap window itself (no agent running) allows nothing more: with no
// agent nobody writes pod statuses, so the API keeps the last ones.
//
// The takeover's wall time is measured from the old agent's SIGTERM to the
// moment the new agent serves every pod as running and ready on its
// read-only /pods, with the same container IDs, while the API shows every
// pod Ready: "every pod Ready again" in issue 16's words (they never stop
// being Ready in the API).

const (
	takeoverStaticHost = 2 // static host-network pods
	takeoverStaticPod  = 2 // static pod-network pods
	takeoverAPIHost    = 5
	takeoverAPIPod     = 11
	// takeoverSettle is how long the new agent runs, watched, after it
	// took over, before the next swap: several of its resyncs and probe
	// periods.
	takeoverSettle = 20 * time.Second
)

// takeoverScript writes a random token into the emptyDir once (a restarted
// container would keep it; a new emptyDir would get another) and sleeps.
const takeoverScript = `[ -f /data/token ] || cat /proc/sys/kernel/random/uuid > /data/token; exec sleep 3600`

func takeoverPodSpec(name string, hostNetwork, probe bool) string {
	readiness := ""
	if probe {
		readiness = `
    readinessProbe:
      exec: {command: ["test", "-f", "/data/token"]}
      periodSeconds: 2`
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  hostNetwork: %t
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", %q]
    volumeMounts: [{name: data, mountPath: /data}]%s
  volumes:
  - name: data
    emptyDir: {}
`, name, framework.NodeName, hostNetwork, takeoverScript, readiness)
}

// takeoverNames returns the API names of the test's pods (static pods under
// their mirror names) and writes the static manifests.
func takeoverPods(t *testing.T, n *framework.Nodelet) (static, api []string) {
	for i := range takeoverStaticHost + takeoverStaticPod {
		name := fmt.Sprintf("s-%d", i)
		spec := strings.Replace(takeoverPodSpec(name, i < takeoverStaticHost, i%2 == 0), "  nodeName: "+framework.NodeName+"\n", "", 1)
		n.WriteManifest(name+".yaml", spec)
		static = append(static, name+staticSuffix)
	}
	for i := range takeoverAPIHost + takeoverAPIPod {
		api = append(api, fmt.Sprintf("a-%d", i))
	}
	return static, api
}

// podSnap is what must survive a takeover, per pod.
type podSnap struct {
	uid      string
	ids      map[string]string
	restarts map[string]int32
	ips      []string
	token    string
}

func snapOf(p *v1.Pod) podSnap {
	s := podSnap{uid: string(p.UID), ids: map[string]string{}, restarts: map[string]int32{}}
	for _, c := range p.Status.ContainerStatuses {
		s.ids[c.Name] = c.ContainerID
		s.restarts[c.Name] = c.RestartCount
	}
	for _, ip := range p.Status.PodIPs {
		s.ips = append(s.ips, ip.IP)
	}
	return s
}

// takeoverReady: Running, Ready, every container running.
func takeoverReady(p *v1.Pod) bool {
	if p == nil || p.Status.Phase != v1.PodRunning || !framework.Running(p) || len(p.Status.PodIPs) == 0 {
		return false
	}
	return conditionTrue(p, v1.PodReady) && conditionTrue(p, v1.ContainersReady)
}

func conditionTrue(p *v1.Pod, typ v1.PodConditionType) bool {
	return podCondition(p, typ) == v1.ConditionTrue
}

// flickers returns what in p differs from want, the pod as it was before
// the swap ("" when nothing).
func flickers(p *v1.Pod, want podSnap) []string {
	var out []string
	if string(p.UID) != want.uid {
		out = append(out, fmt.Sprintf("re-created (uid %s, was %s)", p.UID, want.uid))
	}
	if p.Status.Phase != v1.PodRunning {
		out = append(out, fmt.Sprintf("phase %s", p.Status.Phase))
	}
	for _, typ := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		if !conditionTrue(p, typ) {
			out = append(out, fmt.Sprintf("%s not True", typ))
		}
	}
	got := snapOf(p)
	for name, id := range want.ids {
		c := framework.ContainerStatus(p, name)
		switch {
		case c == nil:
			out = append(out, fmt.Sprintf("container %s has no status", name))
		case c.State.Running == nil:
			out = append(out, fmt.Sprintf("container %s not running: %+v", name, c.State))
		case got.ids[name] != id:
			out = append(out, fmt.Sprintf("container %s is %s, was %s", name, got.ids[name], id))
		case got.restarts[name] != want.restarts[name]:
			out = append(out, fmt.Sprintf("container %s restart count %d, was %d", name, got.restarts[name], want.restarts[name]))
		}
	}
	if !slices.Equal(got.ips, want.ips) {
		out = append(out, fmt.Sprintf("pod IPs %v, were %v", got.ips, want.ips))
	}
	return out
}

// readinessFlicker: f (from flickers) is about the Ready or ContainersReady
// condition only.
func readinessFlicker(f string) bool {
	return strings.HasSuffix(f, string(v1.PodReady)+" not True") || strings.HasSuffix(f, string(v1.ContainersReady)+" not True")
}

// flickerWatch records every flicker of the watched pods in watch events.
type flickerWatch struct {
	mu      sync.Mutex
	seen    []string
	updates map[string]int
	stop    func()
	done    chan struct{}
}

func watchFlickers(t *testing.T, admin kubernetes.Interface, rv string, want map[string]podSnap) *flickerWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	fw := &flickerWatch{updates: map[string]int{}, done: make(chan struct{})}
	fw.stop = func() { cancel(); w.Stop(); <-fw.done }
	go func() {
		defer close(fw.done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				if ev.Type == watch.Error && ctx.Err() == nil {
					// A broken watch would hide flickers: it fails the test.
					fw.add(fmt.Sprintf("watch error: %v", ev.Object))
				}
				continue
			}
			snap, tracked := want[p.Name]
			if !tracked {
				continue
			}
			fw.mu.Lock()
			fw.updates[p.Name]++
			fw.mu.Unlock()
			if ev.Type == watch.Deleted {
				fw.add(fmt.Sprintf("%s %s: deleted", time.Now().Format("15:04:05.000"), p.Name))
				continue
			}
			for _, f := range flickers(p, snap) {
				fw.add(fmt.Sprintf("%s %s (%s): %s", time.Now().Format("15:04:05.000"), p.Name, ev.Type, f))
			}
		}
	}()
	return fw
}

func (fw *flickerWatch) add(s string) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.seen = append(fw.seen, s)
}

func (fw *flickerWatch) result() ([]string, map[string]int) {
	fw.stop()
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.seen, fw.updates
}

// TestClusterTakeoverFromUpstream: the upstream kubelet runs 20 pods (static
// and API, host and pod network, each with an emptyDir holding a token, half
// with a readiness probe); it stops; nodelet starts on the same root dir,
// static pod dir, pod log dir and runtime, and takes every pod over without
// restarting a container, with the same pod IPs and emptyDir content, and
// the API showing no flicker. Then back to the upstream kubelet, the same.
func TestClusterTakeoverFromUpstream(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	client := framework.CRIClient(t, rt)
	ip := framework.HostIP(t)
	n := framework.NewNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig, "--node-ip", ip)
	up := framework.NewUpstreamKubelet(t, n, rt, cluster, ip)

	static, api := takeoverPods(t, n)
	up.Start()
	cpWaitNode(t, admin)
	for i, name := range api {
		if _, err := cluster.KubectlInput(takeoverPodSpec(name, i < takeoverAPIHost, i%2 == 0), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	all := append(slices.Clone(static), api...)
	snaps, rv := takeoverWaitAll(t, admin, client, all, nil, 3*time.Minute, "the upstream kubelet runs every pod")
	t.Logf("upstream kubelet runs %d pods (%d static, %d API)", len(all), len(static), len(api))

	t.Run("upstream to nodelet", func(t *testing.T) {
		takeover(t, admin, client, snaps, rv, up.Stop, n.Start, n, false)
	})
	if t.Failed() {
		return
	}
	snaps, rv = takeoverWaitAll(t, admin, client, all, snaps, 30*time.Second, "before the swap back")
	t.Run("nodelet to upstream", func(t *testing.T) {
		takeover(t, admin, client, snaps, rv, n.Stop, up.Start, n, true)
	})
}

// takeover stops the old agent, starts the new one, and checks that it took
// every pod of want over without flicker. upstreamReadiness: the new agent
// is the upstream kubelet, whose own prober may report a probed pod not
// ready until its first probe: those readiness flickers are its behaviour,
// not something nodelet left behind, and are counted, not failed; what
// nodelet must leave right (no container restarted or re-created, the same
// pod UIDs, IPs and emptyDir content) is checked all the same.
func takeover(t *testing.T, admin kubernetes.Interface, client *cri.Client, want map[string]podSnap, rv string, stopOld, startNew func(), n *framework.Nodelet, upstreamReadiness bool) {
	fw := watchFlickers(t, admin, rv, want)
	begin := time.Now()
	stopOld()
	stopped := time.Since(begin)
	startNew()
	poll.Until(t, 2*time.Minute, 50*time.Millisecond, "the new agent serves every pod, unchanged", func() (bool, string) {
		pods, err := n.Pods()
		if err != nil {
			return false, err.Error()
		}
		served := map[string]*v1.Pod{}
		for i := range pods {
			served[pods[i].Name] = &pods[i]
		}
		for name, snap := range want {
			p := served[name]
			if p == nil || !framework.Running(p) || !conditionTrue(p, v1.PodReady) {
				return false, fmt.Sprintf("%s not running and ready on /pods yet: %+v", name, p)
			}
			for c, id := range snap.ids {
				if cs := framework.ContainerStatus(p, c); cs == nil || cs.ContainerID != id {
					return false, fmt.Sprintf("%s: container %s on /pods: %+v, want %s", name, c, cs, id)
				}
			}
		}
		list, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range list.Items {
			if _, ok := want[list.Items[i].Name]; ok && takeoverReady(&list.Items[i]) {
				ready++
			}
		}
		return ready == len(want), fmt.Sprintf("%d of %d pods ready in the API", ready, len(want))
	})
	took := time.Since(begin)
	t.Logf("TAKEOVER: old agent SIGTERM -> new agent serves all %d pods, all Ready in the API: %s (old agent's exit took %s)",
		len(want), took.Round(time.Millisecond), stopped.Round(time.Millisecond))
	time.Sleep(takeoverSettle)
	seen, updates := fw.result()
	var readiness []string
	for _, f := range seen {
		if upstreamReadiness && readinessFlicker(f) {
			readiness = append(readiness, f)
			continue
		}
		t.Errorf("flicker: %s", f)
	}
	if len(readiness) > 0 {
		t.Logf("MEASURE the upstream kubelet's own readiness flickers after it took over (its prober, not nodelet's doing): %d: %v", len(readiness), readiness)
	}
	t.Logf("pod watch events during the swap and %s after: %v", takeoverSettle, updates)

	// What runs is what ran: the same containers, the same emptyDir token.
	list, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		snap, ok := want[p.Name]
		if !ok {
			continue
		}
		for _, f := range flickers(p, snap) {
			t.Errorf("%s after the takeover: %s", p.Name, f)
		}
		if tok := takeoverToken(t, client, p); tok != snap.token {
			t.Errorf("%s: emptyDir token %q, was %q", p.Name, tok, snap.token)
		}
	}
}

// takeoverWaitAll waits until every pod of names is ready in the API and
// returns their snapshots and the list's resource version. With prev, each
// pod must still be as prev says.
func takeoverWaitAll(t *testing.T, admin kubernetes.Interface, client *cri.Client, names []string, prev map[string]podSnap, timeout time.Duration, what string) (map[string]podSnap, string) {
	t.Helper()
	var list *v1.PodList
	poll.Until(t, timeout, 200*time.Millisecond, what, func() (bool, string) {
		var err error
		list, err = admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var missing []string
		for _, name := range names {
			i := slices.IndexFunc(list.Items, func(p v1.Pod) bool { return p.Name == name })
			if i < 0 || !takeoverReady(&list.Items[i]) {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not ready in the API: %v", missing)
	})
	snaps := map[string]podSnap{}
	for i := range list.Items {
		p := &list.Items[i]
		if !slices.Contains(names, p.Name) {
			continue
		}
		s := snapOf(p)
		s.token = takeoverToken(t, client, p)
		if s.token == "" {
			t.Fatalf("%s: no emptyDir token", p.Name)
		}
		if prev != nil {
			for _, f := range flickers(p, prev[p.Name]) {
				t.Errorf("%s %s: %s", what, p.Name, f)
			}
		}
		snaps[p.Name] = s
	}
	return snaps, list.ResourceVersion
}

// takeoverToken reads the token the pod's container wrote into its emptyDir.
func takeoverToken(t *testing.T, client *cri.Client, p *v1.Pod) string {
	t.Helper()
	cs := framework.ContainerStatus(p, "app")
	if cs == nil {
		return ""
	}
	_, id, _ := strings.Cut(cs.ContainerID, "://")
	var out string
	// Generous: an exec on a loaded 2-core machine has taken seconds.
	poll.Until(t, time.Minute, 200*time.Millisecond, p.Name+": read its emptyDir token", func() (bool, string) {
		r, err := client.ExecSync(context.Background(), id, []string{"cat", "/data/token"}, 5*time.Second)
		if err != nil || r.ExitCode != 0 {
			return false, fmt.Sprintf("%v %+v", err, r)
		}
		out = strings.TrimSpace(string(r.Stdout))
		return out != "", "empty"
	})
	return out
}
