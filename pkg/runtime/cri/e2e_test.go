//go:build e2e

package cri_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/runtime/cristatus"
	"github.com/nodelet/nodelet/pkg/runtime/podsync"
)

// These tests run against a real CRI runtime (hack/runtime-up.sh) at
// $NODELET_CRI_ENDPOINT with the busybox and pause images imported.

const busybox = "docker.io/library/busybox:1.35"

type env struct {
	c       *cri.Client
	syncer  *podsync.Syncer
	opts    criconfig.ConfigOptions
	metrics *opMetrics
}

// opMetrics records the Syncer's runtime operations.
type opMetrics struct {
	mu  sync.Mutex
	ops map[string][]time.Duration
}

func (m *opMetrics) ObserveOperation(op string, d time.Duration, _ error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops[op] = append(m.ops[op], d)
}

func (m *opMetrics) take() map[string][]time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := m.ops
	m.ops = map[string][]time.Duration{}
	return ops
}

func setup(t *testing.T, o ...podsync.Options) *env {
	t.Helper()
	endpoint := os.Getenv("NODELET_CRI_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NODELET_CRI_ENDPOINT is not set")
		}
		t.Skip("NODELET_CRI_ENDPOINT is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	dir := t.TempDir()
	opts := criconfig.ConfigOptions{
		PodLogsDir: filepath.Join(dir, "logs"),
		RootDir:    filepath.Join(dir, "root"),
		NodeName:   "e2e-node",
		NodeIPs:    []string{"127.0.0.1"},
	}
	so := podsync.Options{}
	if len(o) > 0 {
		so = o[0]
	}
	so.Config = opts
	m := &opMetrics{ops: map[string][]time.Duration{}}
	so.Metrics = m
	return &env{c: c, syncer: podsync.New(c, nil, so), opts: opts, metrics: m}
}

func newPod(t *testing.T, hostNetwork bool, containers ...v1.Container) *v1.Pod {
	grace := int64(30)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "e2e",
			UID:    types.UID(fmt.Sprintf("e2e-%d", time.Now().UnixNano())),
			Labels: map[string]string{"app": "e2e"},
		},
		Spec: v1.PodSpec{
			HostNetwork:                   hostNetwork,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    containers,
		},
	}
}

func shell(name, script string) v1.Container {
	return v1.Container{Name: name, Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", script}}
}

func (e *env) status(t *testing.T, pod *v1.Pod) *runtime.PodStatus {
	t.Helper()
	st, err := podsync.ReadPodStatus(context.Background(), e.c, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatalf("PodStatus: %v", err)
	}
	return st
}

func (e *env) sync(t *testing.T, pod *v1.Pod) runtime.SyncResult {
	t.Helper()
	res := e.syncer.SyncPod(context.Background(), pod, e.status(t, pod))
	if res.Err != nil {
		t.Fatalf("SyncPod: %v (waiting %v)", res.Err, res.Waiting)
	}
	return res
}

// cleanup kills and removes the pod at the end of the test.
func (e *env) cleanup(t *testing.T, pod *v1.Pod) {
	t.Cleanup(func() {
		ctx := context.Background()
		zero := int64(0)
		st, err := podsync.ReadPodStatus(ctx, e.c, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		if err := e.syncer.KillPod(ctx, pod, st, &zero); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if st, err = podsync.ReadPodStatus(ctx, e.c, pod.UID, pod.Name, pod.Namespace); err == nil {
			err = e.syncer.RemovePod(ctx, st)
		}
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// waitFor polls the pod status until cond holds.
func (e *env) waitFor(t *testing.T, pod *v1.Pod, what string, cond func(*runtime.PodStatus) bool) *runtime.PodStatus {
	t.Helper()
	var st *runtime.PodStatus
	poll.Until(t, 20*time.Second, 50*time.Millisecond, what, func() (bool, string) {
		st = e.status(t, pod)
		return cond(st), describe(st)
	})
	return st
}

// waitLog polls a container log until it contains want.
func waitLog(t *testing.T, path, want string) {
	t.Helper()
	poll.Until(t, 5*time.Second, 50*time.Millisecond, fmt.Sprintf("log %s to contain %q", path, want), func() (bool, string) {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), want), fmt.Sprintf("%q", b)
	})
}

func describe(st *runtime.PodStatus) string {
	var b strings.Builder
	for _, sb := range st.Sandboxes {
		fmt.Fprintf(&b, "[sandbox %.12s %s ip=%s] ", sb.ID, sb.State, sb.IP)
	}
	for _, c := range st.Containers {
		fmt.Fprintf(&b, "[%s#%d %.12s %s exit=%d] ", c.Name, c.RestartCount, c.ID, c.State, c.ExitCode)
	}
	return b.String()
}

func running(name string) func(*runtime.PodStatus) bool {
	return func(st *runtime.PodStatus) bool {
		c := st.LatestContainer(name)
		return c != nil && c.State == runtime.ContainerStateRunning
	}
}

func exited(name string, restartCount int) func(*runtime.PodStatus) bool {
	return func(st *runtime.PodStatus) bool {
		c := st.LatestContainer(name)
		return c != nil && c.RestartCount == restartCount && c.State == runtime.ContainerStateExited
	}
}

func TestHostNetworkPodLifecycle(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	pod := newPod(t, true, shell("main", "sleep 3600"))
	e.cleanup(t, pod)

	e.sync(t, pod)
	st := e.status(t, pod)
	sb := st.LatestSandbox()
	if sb == nil || sb.State != runtime.SandboxStateReady || !sb.HostNetwork {
		t.Fatalf("sandbox = %+v, want a ready host-network sandbox", sb)
	}
	c := st.LatestContainer("main")
	if c == nil || c.State != runtime.ContainerStateRunning {
		t.Fatalf("container main = %+v, want running", c)
	}
	if c.Hash != runtime.HashContainer(&pod.Spec.Containers[0]) || c.RestartCount != 0 || c.SandboxID != sb.ID {
		t.Errorf("container identity = hash %x restarts %d sandbox %s", c.Hash, c.RestartCount, c.SandboxID)
	}
	if c.StartedAt.IsZero() || c.TerminationGracePeriod == nil || *c.TerminationGracePeriod != 30 {
		t.Errorf("container details = startedAt %v grace %v", c.StartedAt, c.TerminationGracePeriod)
	}
	wantLog := filepath.Join(criconfig.PodLogDir(e.opts.PodLogsDir, pod.Namespace, pod.Name, pod.UID), "main", "0.log")
	if c.LogPath != wantLog {
		t.Errorf("LogPath = %q, want %q", c.LogPath, wantLog)
	}

	// A second sync of a healthy pod does nothing.
	if res := e.sync(t, pod); len(res.Waiting) != 0 || res.RetryAfter != 0 {
		t.Errorf("second sync = %+v, want nothing to do", res)
	}
	if st2 := e.status(t, pod); len(st2.Containers) != 1 || len(st2.Sandboxes) != 1 {
		t.Errorf("after second sync: %s", describe(st2))
	}

	// ListState finds it; identity round-trips through the runtime.
	listed, err := e.c.ListState(ctx)
	if err != nil {
		t.Fatalf("ListState: %v", err)
	}
	pods := cristatus.Pods(listed)
	i := slices.IndexFunc(pods, func(p *runtime.Pod) bool { return p.UID == pod.UID })
	if i < 0 {
		t.Fatalf("ListPods does not list pod %s", pod.UID)
	}
	got := pods[i]
	if got.Name != pod.Name || got.Namespace != pod.Namespace || len(got.Sandboxes) != 1 || len(got.Containers) != 1 ||
		got.Containers[0].Name != "main" || got.Containers[0].State != runtime.ContainerStateRunning {
		t.Errorf("ListPods entry = %+v", got)
	}
	raw, err := e.c.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: c.ID})
	if err != nil || len(raw) != 1 {
		t.Fatalf("ListContainers(%s) = %v, %v", c.ID, raw, err)
	}
	id, err := cri.ParseContainerIdentity(raw[0].Labels, raw[0].Annotations)
	if err != nil {
		t.Fatalf("ParseContainerIdentity: %v", err)
	}
	if id.PodUID != pod.UID || id.PodName != pod.Name || id.ContainerName != "main" || id.Hash != c.Hash {
		t.Errorf("identity = %+v", id)
	}
	sbs, err := e.c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: sb.ID})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("ListPodSandbox(%s) = %v, %v", sb.ID, sbs, err)
	}
	if sbs[0].Labels["app"] != "e2e" || sbs[0].Labels[cri.LabelPodUID] != string(pod.UID) {
		t.Errorf("sandbox labels = %v", sbs[0].Labels)
	}

	// Kill and remove: nothing is left.
	zero := int64(0)
	if err := e.syncer.KillPod(ctx, pod, st, &zero); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if err := e.syncer.RemovePod(ctx, e.status(t, pod)); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if st := e.status(t, pod); len(st.Sandboxes)+len(st.Containers) != 0 {
		t.Errorf("after RemovePod: %s", describe(st))
	}
}

func TestPodNetwork(t *testing.T) {
	e := setup(t)
	ctr := shell("main", "echo ip=$POD_IP name=$POD_NAME; sleep 3600")
	ctr.Env = []v1.EnvVar{
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	pod := newPod(t, false, ctr)
	e.cleanup(t, pod)

	e.sync(t, pod)
	st := e.waitFor(t, pod, "main running", running("main"))
	sb := st.LatestSandbox()
	_, cidr, _ := net.ParseCIDR("10.88.0.0/16")
	if sb.HostNetwork || !cidr.Contains(net.ParseIP(sb.IP)) || st.PodIP() != sb.IP {
		t.Fatalf("sandbox = %+v, want an IP in %s", sb, cidr)
	}
	waitLog(t, st.LatestContainer("main").LogPath, fmt.Sprintf("ip=%s name=%s", sb.IP, pod.Name))
	// What stats reads of the pod: the sandbox process (its network
	// namespace) and, where the runtime can, the pod's own figures.
	if pid, err := e.c.SandboxPID(context.Background(), sb.ID); err != nil {
		t.Errorf("SandboxPID: %v", err)
	} else if _, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid)); err != nil {
		t.Errorf("sandbox process %d: %v", pid, err)
	}
	if stats, err := e.c.ListPodSandboxStats(context.Background(), &runtimeapi.PodSandboxStatsFilter{Id: sb.ID}); err != nil {
		t.Logf("ListPodSandboxStats (some runtimes cannot): %v", err)
	} else if len(stats) != 1 || stats[0].GetAttributes().GetId() != sb.ID {
		t.Errorf("ListPodSandboxStats = %v, want the sandbox %s", stats, sb.ID)
	}
	// A synced healthy pod-network pod stays as it is.
	e.sync(t, pod)
	if st2 := e.status(t, pod); len(st2.Sandboxes) != 1 || st2.LatestSandbox().ID != sb.ID {
		t.Errorf("sandbox replaced on resync: %s", describe(st2))
	}
}

func TestKillHonoursGracePeriod(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	// Each shell says "trapped" once its trap is set, so that the kill
	// below cannot come before it.
	// Exits 3 s after SIGTERM: the kill takes ~3 s, though grace is 30 s.
	polite := newPod(t, true, shell("polite", "trap 'sleep 3; exit 0' TERM; echo trapped; sleep 3600 & wait"))
	polite.Name += "-polite"
	// Ignores SIGTERM: killed when its 2 s grace period ends.
	stubborn := newPod(t, true, shell("stubborn", "trap '' TERM; echo trapped; while true; do sleep 1; done"))
	stubborn.Name += "-stubborn"
	two := int64(2)
	stubborn.Spec.TerminationGracePeriodSeconds = &two
	for _, p := range []*v1.Pod{polite, stubborn} {
		e.cleanup(t, p)
		e.sync(t, p)
		name := p.Spec.Containers[0].Name
		st := e.waitFor(t, p, "running", running(name))
		waitLog(t, st.LatestContainer(name).LogPath, "trapped")
	}
	e.metrics.take()

	type result struct {
		took time.Duration
		err  error
	}
	results := make([]chan result, 2)
	for i, p := range []*v1.Pod{polite, stubborn} {
		results[i] = make(chan result, 1)
		st := e.status(t, p)
		go func() {
			start := time.Now()
			err := e.syncer.KillPod(ctx, p, st, nil)
			results[i] <- result{time.Since(start), err}
		}()
	}
	for i, want := range []struct {
		name     string
		min, max time.Duration
		exit     int32
	}{
		{"polite", 2800 * time.Millisecond, 5 * time.Second, 0},
		{"stubborn", 1800 * time.Millisecond, 4 * time.Second, 137},
	} {
		r := <-results[i]
		if r.err != nil {
			t.Fatalf("KillPod %s: %v", want.name, r.err)
		}
		t.Logf("KillPod %s took %v", want.name, r.took)
		if r.took < want.min || r.took > want.max {
			t.Errorf("KillPod %s took %v, want %v..%v", want.name, r.took, want.min, want.max)
		}
		if i == 1 {
			t.Logf("runtime operations: %v", e.metrics.take())
		}
		p := []*v1.Pod{polite, stubborn}[i]
		st := e.status(t, p)
		c := st.LatestContainer(want.name)
		if c.State != runtime.ContainerStateExited || c.ExitCode != want.exit {
			t.Errorf("%s after kill: state %s exit %d, want exited %d", want.name, c.State, c.ExitCode, want.exit)
		}
		if sb := st.LatestSandbox(); sb.State != runtime.SandboxStateNotReady {
			t.Errorf("%s sandbox after kill: %s", want.name, sb.State)
		}
	}
}

func TestRestartAndCrashLoopBackOff(t *testing.T) {
	e := setup(t, podsync.Options{CrashBackoffInitial: time.Second, CrashBackoffMax: 4 * time.Second})
	pod := newPod(t, true, shell("crash", "exit 1"), shell("steady", "sleep 3600"))
	e.cleanup(t, pod)

	e.sync(t, pod)
	e.waitFor(t, pod, "first exit", exited("crash", 0))
	// The first restart is immediate.
	if res := e.sync(t, pod); len(res.Waiting) != 0 {
		t.Fatalf("first restart: waiting %v", res.Waiting)
	}
	e.waitFor(t, pod, "second exit", exited("crash", 1))
	// Then it backs off 1 s.
	inBackoff := time.Now()
	res := e.syncer.SyncPod(context.Background(), pod, e.status(t, pod))
	w := res.Waiting["crash"]
	if w.Reason != podsync.ReasonCrashLoopBackOff || !strings.Contains(w.Message, "back-off 1s restarting failed container=crash") ||
		res.RetryAfter <= 0 || res.RetryAfter > time.Second {
		t.Fatalf("sync in back-off = %+v", res)
	}
	// Resync, as the worker would, until the back-off lets the restart
	// through; not before RetryAfter has passed (give or take the
	// difference between the wall clock the runtime stamps exits with and
	// the monotonic one measured here).
	backoff := res.RetryAfter
	poll.Until(t, 5*time.Second, 50*time.Millisecond, "restart after back-off", func() (bool, string) {
		res = e.sync(t, pod)
		return len(res.Waiting) == 0, fmt.Sprintf("%+v", res)
	})
	if waited := time.Since(inBackoff); waited < backoff-10*time.Millisecond {
		t.Fatalf("restarted after %v, before the back-off of %v ended", waited, backoff)
	}
	st := e.waitFor(t, pod, "third exit", exited("crash", 2))
	// The steady container was never touched.
	if n := countInstances(st, "steady"); n != 1 {
		t.Errorf("steady has %d instances, want 1", n)
	}
}

func TestChangedSpecRestartsOnlyThatContainer(t *testing.T) {
	e := setup(t)
	pod := newPod(t, true, shell("a", "sleep 3600"), shell("b", "sleep 3600"))
	// A static pod: its manifest may change in place (an API pod's
	// container changes only by its image, upstream's hash rule).
	pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	// sleep as PID 1 ignores SIGTERM: keep the kill of b short.
	one := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &one
	e.cleanup(t, pod)
	e.sync(t, pod)
	before := e.waitFor(t, pod, "a and b running", func(st *runtime.PodStatus) bool { return running("a")(st) && running("b")(st) })

	changed := pod.DeepCopy()
	changed.Spec.Containers[1].Command = []string{"sh", "-c", "sleep 3601"}
	e.sync(t, changed)
	after := e.waitFor(t, changed, "b restarted", func(st *runtime.PodStatus) bool {
		b := st.LatestContainer("b")
		return b.RestartCount == 1 && b.State == runtime.ContainerStateRunning
	})
	if before.LatestContainer("a").ID != after.LatestContainer("a").ID {
		t.Errorf("container a was replaced")
	}
	if after.LatestSandbox().ID != before.LatestSandbox().ID {
		t.Errorf("sandbox was replaced")
	}
}

func countInstances(st *runtime.PodStatus, name string) int {
	n := 0
	for _, c := range st.Containers {
		if c.Name == name {
			n++
		}
	}
	return n
}

// TestStartLatency compares manifest-to-running through the Syncer (status
// read + SyncPod, as a pod worker does) with the bare CRI calls it cannot
// avoid: RunPodSandbox, CreateContainer, StartContainer. Rounds alternate
// which goes first, so warm-up and drift hit both alike. It reports; the
// machine is too noisy for a hard bound, set NODELET_LATENCY_ROUNDS for more.
func TestStartLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("latency comparison skipped in -short mode")
	}
	rounds := 7
	if n, err := strconv.Atoi(os.Getenv("NODELET_LATENCY_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for _, hostNetwork := range []bool{true, false} {
		t.Run(fmt.Sprintf("hostNetwork=%v", hostNetwork), func(t *testing.T) {
			e := setup(t)
			raw := map[string][]time.Duration{}
			synced := map[string][]time.Duration{}
			for i := 0; i < rounds; i++ {
				for _, viaSyncer := range []bool{i%2 == 0, i%2 != 0} {
					pod := newPod(t, hostNetwork, shell("main", "sleep 3600"))
					pod.Name = fmt.Sprintf("lat-%d-%v", i, viaSyncer)
					one := int64(1)
					pod.Spec.TerminationGracePeriodSeconds = &one
					e.cleanup(t, pod)
					if viaSyncer {
						e.metrics.take()
						total, sync := e.startViaSyncer(t, pod)
						ops := e.metrics.take()
						cri := time.Duration(0)
						for op, ds := range ops {
							synced[op] = append(synced[op], ds...)
							for _, d := range ds {
								cri += d
							}
						}
						synced["total"] = append(synced["total"], total)
						synced["syncpod"] = append(synced["syncpod"], sync)
						// What the Syncer adds around the three calls raw CRI makes too.
						synced["overhead"] = append(synced["overhead"], total-cri)
					} else {
						for op, d := range e.startRaw(t, pod) {
							raw[op] = append(raw[op], d)
						}
					}
				}
			}
			r, s, so := median(raw["total"]), median(synced["total"]), median(synced["syncpod"])
			t.Logf("raw CRI sandbox+create+start: median %v  (sandbox %v, create %v, start %v)", r,
				median(raw[podsync.OpRunSandbox]), median(raw[podsync.OpCreateContainer]), median(raw[podsync.OpStartContainer]))
			t.Logf("PodStatus+SyncPod:            median %v = %.2fx  (sandbox %v, create %v, start %v)", s, float64(s)/float64(r),
				median(synced[podsync.OpRunSandbox]), median(synced[podsync.OpCreateContainer]), median(synced[podsync.OpStartContainer]))
			t.Logf("SyncPod alone:                median %v = %.2fx", so, float64(so)/float64(r))
			t.Logf("Syncer overhead beyond the 3 CRI calls (PodStatus, ImageStatus, mkdir, configs): median %v, max %v = %.1f%% of raw",
				median(synced["overhead"]), slices.Max(synced["overhead"]), 100*float64(median(synced["overhead"]))/float64(r))
			t.Logf("all raw totals %v", raw["total"])
			t.Logf("all syncer totals %v", synced["total"])
		})
	}
}

func (e *env) startViaSyncer(t *testing.T, pod *v1.Pod) (total, syncOnly time.Duration) {
	ctx := context.Background()
	start := time.Now()
	st, err := podsync.ReadPodStatus(ctx, e.c, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	s2 := time.Now()
	if res := e.syncer.SyncPod(ctx, pod, st); res.Err != nil {
		t.Fatal(res.Err)
	}
	return time.Since(start), time.Since(s2)
}

func (e *env) startRaw(t *testing.T, pod *v1.Pod) map[string]time.Duration {
	ctx := context.Background()
	sbCfg, err := criconfig.SandboxConfig(pod, 0, criconfig.SandboxResources{}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctrCfg, _, err := criconfig.ContainerConfig(pod, &pod.Spec.Containers[0], criconfig.ContainerParams{}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sbCfg.LogDirectory, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	ops := map[string]time.Duration{}
	start := time.Now()
	sb, err := e.c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	ops[podsync.OpRunSandbox] = time.Since(start)
	t1 := time.Now()
	id, err := e.c.CreateContainer(ctx, sb, ctrCfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	ops[podsync.OpCreateContainer] = time.Since(t1)
	t2 := time.Now()
	if err := e.c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	ops[podsync.OpStartContainer] = time.Since(t2)
	ops["total"] = time.Since(start)
	return ops
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
