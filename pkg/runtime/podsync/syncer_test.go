package podsync

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/pkg/runtime"
)

type harness struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	rt     *fakeRuntime
	events *record.FakeRecorder
	s      *Syncer
}

func newHarness(t *testing.T) *harness {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	rt := newFakeRuntime(clk)
	ev := record.NewFakeRecorder(1000)
	dir := t.TempDir()
	opts := Options{Clock: clk}
	opts.Config.PodLogsDir = dir + "/logs"
	opts.Config.RootDir = dir + "/root"
	return &harness{t: t, clock: clk, rt: rt, events: ev, s: New(rt, ev, opts)}
}

func (h *harness) sync(pod *v1.Pod) runtime.SyncResult {
	return h.s.SyncPod(context.Background(), pod, h.rt.status(pod.UID))
}

// calls returns the runtime calls since the last look, with image calls
// (made concurrently with sandbox creation) split off.
func (h *harness) calls() (images, rest []string) {
	for _, c := range h.rt.takeCalls() {
		if strings.HasPrefix(c, "ImageStatus") || strings.HasPrefix(c, "PullImage") {
			images = append(images, c)
		} else {
			rest = append(rest, c)
		}
	}
	return images, rest
}

func (h *harness) takeEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func testPod(containers ...string) *v1.Pod {
	grace := int64(7)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			HostNetwork:                   true,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
		},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent})
	}
	return p
}

func wantCalls(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestSyncPodStartsNewPodWithMinimalCalls(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	res := h.sync(pod)
	if res.Err != nil || len(res.Waiting) != 0 || res.RetryAfter != 0 {
		t.Fatalf("SyncPod = %+v", res)
	}
	images, rest := h.calls()
	// One image status for the shared image, no pull, no sandbox status.
	wantCalls(t, "image calls", images, []string{"ImageStatus busybox:1.35"})
	wantCalls(t, "runtime calls", rest, []string{
		"RunPodSandbox web/0",
		"CreateContainer a/0", "StartContainer a",
		"CreateContainer b/0", "StartContainer b",
	})
	wantCalls(t, "events", h.takeEvents(), []string{
		`Normal Pulled Container image "busybox:1.35" already present on machine`,
		"Normal Created Created container a", "Normal Started Started container a",
		"Normal Created Created container b", "Normal Started Started container b",
	})

	// Nothing to do on the next sync: no runtime calls at all.
	if res := h.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("second SyncPod = %+v", res)
	}
	images, rest = h.calls()
	if len(images)+len(rest) != 0 {
		t.Errorf("second sync made calls %q %q", images, rest)
	}
}

// TestSyncPodRestartsOnlyChangedContainer: an edit of one container of a
// static pod (whose UID stays) restarts that container only. An API pod's
// container restarts only for a new image (plan's tests).
func TestSyncPodRestartsOnlyChangedContainer(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	h.sync(pod)
	h.calls()

	changed := pod.DeepCopy()
	changed.Spec.Containers[1].Args = []string{"--new"}
	if res := h.sync(changed); res.Err != nil {
		t.Fatalf("SyncPod = %+v", res)
	}
	_, rest := h.calls()
	wantCalls(t, "runtime calls", rest, []string{"StopContainer b", "CreateContainer b/1", "StartContainer b"})
	st := h.rt.status(pod.UID)
	if a := st.LatestContainer("a"); a.RestartCount != 0 || a.State != runtime.ContainerStateRunning {
		t.Errorf("a = %+v, want untouched", a)
	}
	for id, grace := range h.rt.stops {
		if grace != 7*time.Second {
			t.Errorf("stop of %s with grace %v, want the pod's 7s", id, grace)
		}
	}
}

func TestSyncPodCrashLoopBackOff(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	h.sync(pod)
	h.calls()

	// First exit: immediate restart.
	h.clock.Step(time.Second)
	h.rt.exit("a", 1)
	if res := h.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("first restart: %+v", res)
	}
	_, rest := h.calls()
	wantCalls(t, "first restart", rest, []string{"CreateContainer a/1", "StartContainer a"})

	// Each following exit waits 10s, 20s, ... up to 5 min.
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second} {
		h.clock.Step(2 * time.Second) // ran for 2s
		h.rt.exit("a", 1)
		h.clock.Step(time.Second)
		res := h.sync(pod)
		w := res.Waiting["a"]
		wantMsg := "back-off " + want.String() + " restarting failed container=a pod=web_default(uid-1)"
		if w.Reason != ReasonCrashLoopBackOff || w.Message != wantMsg {
			t.Fatalf("exit %d: waiting = %+v, want %s %q", i+2, w, ReasonCrashLoopBackOff, wantMsg)
		}
		if res.RetryAfter != want-time.Second {
			t.Errorf("exit %d: RetryAfter = %v, want %v", i+2, res.RetryAfter, want-time.Second)
		}
		if res.Err != nil {
			t.Errorf("exit %d: back-off is not an error, got %v", i+2, res.Err)
		}
		_, rest := h.calls()
		if slices.ContainsFunc(rest, func(c string) bool { return !strings.HasPrefix(c, "RemoveContainer") }) {
			t.Fatalf("exit %d: calls during back-off %q", i+2, rest)
		}
		// Just before the end: still waiting; at the end: restarted.
		h.clock.Step(res.RetryAfter - time.Millisecond)
		if res := h.sync(pod); res.Waiting["a"].Reason != ReasonCrashLoopBackOff {
			t.Fatalf("exit %d: restarted before the back-off ended", i+2)
		}
		h.clock.Step(time.Millisecond)
		if res := h.sync(pod); len(res.Waiting) != 0 {
			t.Fatalf("exit %d: not restarted after the back-off: %+v", i+2, res)
		}
		h.calls()
	}

	// After running for more than 10 minutes, a crash restarts at once and
	// the back-off starts over at 10s.
	h.clock.Step(11 * time.Minute)
	h.rt.exit("a", 1)
	if res := h.sync(pod); len(res.Waiting) != 0 {
		t.Fatalf("after a long run: %+v, want an immediate restart", res)
	}
	h.clock.Step(time.Second)
	h.rt.exit("a", 1)
	if res := h.sync(pod); !strings.HasPrefix(res.Waiting["a"].Message, "back-off 10s ") {
		t.Fatalf("after reset: %+v, want back-off 10s", res)
	}
	// Old dead instances are pruned as restarts go on: newest + one dead.
	if n := len(h.rt.status(pod.UID).Containers); n > 2 {
		t.Errorf("%d instances kept, want at most 2", n)
	}
}

func TestSyncPodBackOffPerContainer(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	h.sync(pod)
	h.rt.exit("a", 1)
	h.sync(pod) // immediate restart of a
	h.rt.exit("a", 1)
	h.rt.exit("b", 0)
	res := h.sync(pod)
	if res.Waiting["a"].Reason != ReasonCrashLoopBackOff {
		t.Errorf("a: %+v, want CrashLoopBackOff", res.Waiting["a"])
	}
	if _, ok := res.Waiting["b"]; ok {
		t.Errorf("b restarted for the first time backs off: %+v", res.Waiting["b"])
	}
	if st := h.rt.status(pod.UID); st.LatestContainer("b").State != runtime.ContainerStateRunning {
		t.Errorf("b not restarted")
	}
}

func TestSyncPodPullPolicies(t *testing.T) {
	tests := []struct {
		name       string
		image      string
		policy     v1.PullPolicy
		present    bool
		pullErr    error
		wantImages []string
		wantReason string
		wantErr    error
	}{
		{name: "IfNotPresent, present: no pull", image: "busybox:1.35", policy: v1.PullIfNotPresent, present: true,
			wantImages: []string{"ImageStatus busybox:1.35"}},
		{name: "IfNotPresent, absent: pull", image: "nginx:1.2", policy: v1.PullIfNotPresent,
			wantImages: []string{"ImageStatus nginx:1.2", "PullImage nginx:1.2"}},
		{name: "Always, present: pull anyway", image: "busybox:1.35", policy: v1.PullAlways, present: true,
			wantImages: []string{"PullImage busybox:1.35"}},
		{name: "Never, present: start", image: "busybox:1.35", policy: v1.PullNever, present: true,
			wantImages: []string{"ImageStatus busybox:1.35"}},
		{name: "Never, absent: ErrImageNeverPull", image: "nginx:1.2", policy: v1.PullNever,
			wantImages: []string{"ImageStatus nginx:1.2"}, wantReason: ReasonErrImageNeverPull, wantErr: ErrImageNeverPull},
		{name: "default for :latest is Always", image: "busybox:latest", present: true,
			wantImages: []string{"PullImage busybox:latest"}},
		{name: "default for untagged is Always", image: "registry.local:5000/busybox", present: true,
			wantImages: []string{"PullImage registry.local:5000/busybox"}},
		{name: "default for a tag is IfNotPresent", image: "registry.local:5000/busybox:1", present: true,
			wantImages: []string{"ImageStatus registry.local:5000/busybox:1"}},
		{name: "pull fails: ErrImagePull", image: "nginx:1.2", policy: v1.PullIfNotPresent, pullErr: errors.New("no route to registry"),
			wantImages: []string{"ImageStatus nginx:1.2", "PullImage nginx:1.2"}, wantReason: ReasonErrImagePull, wantErr: ErrImagePull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.rt.images = map[string]string{}
			if tt.present {
				h.rt.images[tt.image] = "sha256:x"
			}
			h.rt.pullErr = tt.pullErr
			pod := testPod("a")
			pod.Spec.Containers[0].Image = tt.image
			pod.Spec.Containers[0].ImagePullPolicy = tt.policy
			res := h.sync(pod)
			images, _ := h.calls()
			wantCalls(t, "image calls", images, tt.wantImages)
			if got := res.Waiting["a"].Reason; got != tt.wantReason {
				t.Errorf("waiting reason = %q, want %q", got, tt.wantReason)
			}
			if !errors.Is(res.Err, tt.wantErr) || (tt.wantErr == nil) != (res.Err == nil) {
				t.Errorf("Err = %v, want %v", res.Err, tt.wantErr)
			}
			running := h.rt.status(pod.UID).LatestContainer("a") != nil
			if running != (tt.wantReason == "") {
				t.Errorf("container created = %v", running)
			}
		})
	}
}

func TestSyncPodImagePullBackOff(t *testing.T) {
	h := newHarness(t)
	h.rt.pullErr = errors.New("registry unreachable")
	pod := testPod("a")
	pod.Spec.Containers[0].Image = "nginx:1.2"

	res := h.sync(pod)
	if res.Waiting["a"].Reason != ReasonErrImagePull || res.RetryAfter != 10*time.Second {
		t.Fatalf("first sync: %+v", res)
	}
	h.calls()
	h.clock.Step(4 * time.Second)
	res = h.sync(pod)
	if w := res.Waiting["a"]; w.Reason != ReasonImagePullBackOff || w.Message != `Back-off pulling image "nginx:1.2"` ||
		res.RetryAfter != 6*time.Second || !errors.Is(res.Err, ErrImagePullBackOff) {
		t.Fatalf("sync in back-off: %+v", res)
	}
	if images, _ := h.calls(); slices.Contains(images, "PullImage nginx:1.2") {
		t.Errorf("pulled during back-off")
	}
	h.clock.Step(6 * time.Second)
	res = h.sync(pod)
	if res.Waiting["a"].Reason != ReasonErrImagePull || res.RetryAfter != 20*time.Second {
		t.Fatalf("second pull: %+v, want ErrImagePull and 20s", res)
	}
	h.rt.pullErr = nil
	h.clock.Step(20 * time.Second)
	if res := h.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("pull works again: %+v", res)
	}
	ev := h.takeEvents()
	for _, want := range []string{`Normal Pulling Pulling image "nginx:1.2"`, `Warning Failed Error: ErrImagePull`,
		`Normal BackOff Back-off pulling image "nginx:1.2"`} {
		if !slices.Contains(ev, want) {
			t.Errorf("events %q lack %q", ev, want)
		}
	}
}

func TestSyncPodContainerErrors(t *testing.T) {
	for _, tt := range []struct {
		name       string
		setup      func(*fakeRuntime)
		wantReason string
		wantErr    error
	}{
		{"create fails", func(f *fakeRuntime) { f.createErr["a"] = errors.New("boom") }, ReasonCreateContainerError, ErrCreateContainer},
		{"start fails", func(f *fakeRuntime) { f.startErr["a"] = errors.New("exec: no such file") }, ReasonRunContainerError, ErrRunContainer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(h.rt)
			res := h.sync(testPod("a", "b"))
			if got := res.Waiting["a"].Reason; got != tt.wantReason {
				t.Errorf("a waiting = %q, want %q", got, tt.wantReason)
			}
			if !errors.Is(res.Err, tt.wantErr) {
				t.Errorf("Err = %v, want %v", res.Err, tt.wantErr)
			}
			// A failing container does not hold the others back.
			if _, ok := res.Waiting["b"]; ok {
				t.Errorf("b waiting: %+v", res.Waiting["b"])
			}
		})
	}
}

func TestSyncPodUnsupportedVolume(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.Volumes = []v1.Volume{{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}}
	res := h.sync(pod)
	want := `volume "token": volume type projected not supported yet`
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) || !errors.Is(res.Err, ErrCreateContainerConfig) {
		t.Fatalf("Err = %v, want %q", res.Err, want)
	}
	if w := res.Waiting["a"]; w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, want) {
		t.Errorf("waiting = %+v", w)
	}
	if _, rest := h.calls(); len(rest) != 0 {
		t.Errorf("runtime calls for an unrunnable pod: %q", rest)
	}
}

func TestSyncPodEmptyDirAndHostPath(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	hostDir := t.TempDir() + "/created"
	doc := v1.HostPathDirectoryOrCreate
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &doc}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "host", MountPath: "/host", ReadOnly: true}}
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("SyncPod: %v", res.Err)
	}
	var mounts []string
	for _, c := range h.rt.containers {
		for _, m := range c.config.Mounts {
			mounts = append(mounts, m.HostPath+"->"+m.ContainerPath)
		}
	}
	scratch := h.s.opts.Config.RootDir + "/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch"
	hosts := h.s.opts.Config.RootDir + "/pods/uid-1/etc-hosts"
	wantCalls(t, "mounts", mounts, []string{scratch + "->/scratch", hostDir + "->/host", hosts + "->/etc/hosts"})
	for _, dir := range []string{scratch, hostDir} {
		if fi, err := statDir(dir); err != nil || !fi {
			t.Errorf("%s not created: %v", dir, err)
		}
	}
}

// TestSyncPodPodIPReadOnce: the pod IP is read once, before the first
// container: the managed /etc/hosts needs it, and env vars reuse it.
func TestSyncPodPodIPReadOnce(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	pod.Spec.HostNetwork = false
	pod.Spec.Containers[1].Env = []v1.EnvVar{{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	h.sync(pod)
	_, rest := h.calls()
	wantCalls(t, "runtime calls", rest, []string{
		"RunPodSandbox web/0", "PodSandboxStatus sb1", "CreateContainer a/0", "StartContainer a",
		"CreateContainer b/0", "StartContainer b",
	})
	for _, c := range h.rt.containers {
		if c.config.Metadata.Name == "b" && (len(c.config.Envs) != 1 || string(c.config.Envs[0].Value) != "10.88.0.1") {
			t.Errorf("b env = %v, want IP=10.88.0.1", c.config.Envs)
		}
	}
}

func TestSyncPodRecreatesDeadSandbox(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	h.sync(pod)
	h.calls()
	sb := h.rt.status(pod.UID).LatestSandbox().ID
	h.rt.killSandbox(sb)
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("SyncPod: %v", res.Err)
	}
	_, rest := h.calls()
	wantCalls(t, "runtime calls", rest, []string{
		"StopContainer a", "StopPodSandbox " + sb,
		"RunPodSandbox web/1", "CreateContainer a/1", "StartContainer a",
	})
	if ev := h.takeEvents(); !slices.Contains(ev, "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created.") {
		t.Errorf("events %q lack SandboxChanged", ev)
	}
}

func TestSyncPodInitContainers(t *testing.T) {
	h := newHarness(t)
	pod := testPod("app")
	pod.Spec.InitContainers = []v1.Container{
		{Name: "i1", Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent},
		{Name: "i2", Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent},
	}
	step := func(want ...string) {
		t.Helper()
		if res := h.sync(pod); res.Err != nil {
			t.Fatalf("SyncPod: %v", res.Err)
		}
		_, rest := h.calls()
		wantCalls(t, "runtime calls", rest, want)
	}
	step("RunPodSandbox web/0", "CreateContainer i1/0", "StartContainer i1")
	step() // i1 still running
	h.rt.exit("i1", 0)
	step("CreateContainer i2/0", "StartContainer i2")
	h.rt.exit("i2", 0)
	step("CreateContainer app/0", "StartContainer app")
	step()
}

func TestKillPodHonoursGraceInParallel(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b", "done")
	h.sync(pod)
	h.rt.exit("done", 0)
	h.calls()

	// Both stops must be in flight at once, or this deadlocks.
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	h.rt.onStop = func(string, time.Duration) {
		arrived <- struct{}{}
		<-release
	}
	go func() {
		for range 2 {
			select {
			case <-arrived:
			case <-time.After(5 * time.Second):
				t.Error("container stops are not concurrent")
			}
		}
		close(release)
	}()
	st := h.rt.status(pod.UID)
	if err := h.s.KillPod(context.Background(), pod, st, nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	_, rest := h.calls()
	slices.Sort(rest[:2])
	wantCalls(t, "runtime calls", rest, []string{"StopContainer a", "StopContainer b", "StopPodSandbox " + st.LatestSandbox().ID})
	for id, grace := range h.rt.stops {
		if grace != 7*time.Second {
			t.Errorf("container %s stopped with grace %v, want 7s", id, grace)
		}
	}
	if ev := h.takeEvents(); !slices.Contains(ev, "Normal Killing Stopping container a") {
		t.Errorf("events %q lack Killing", ev)
	}
}

func TestKillContainerGracePeriod(t *testing.T) {
	seven, three, one, zero := int64(7), int64(3), int64(1), int64(0)
	pod := testPod("a")
	deleting := testPod("a")
	deleting.DeletionGracePeriodSeconds = &three
	for _, tt := range []struct {
		name     string
		pod      *v1.Pod
		stamped  *int64
		override *int64
		want     time.Duration
	}{
		{"pod spec", pod, nil, nil, 7 * time.Second},
		{"deletion grace wins over spec", deleting, &seven, nil, 3 * time.Second},
		{"override wins", deleting, &seven, &one, time.Second},
		{"zero override kills at once", pod, nil, &zero, 0},
		{"orphan: stamped on the container", nil, &seven, nil, 7 * time.Second},
		{"orphan without stamp: 30s", nil, nil, nil, 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := containerGrace(tt.pod, &runtime.ContainerStatus{TerminationGracePeriod: tt.stamped}, tt.override); got != tt.want {
				t.Errorf("grace = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKillPodOrphanAndGone(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	h.sync(pod)
	st := h.rt.status(pod.UID)
	// Already removed behind our back: not an error.
	h.rt.RemovePodSandbox(context.Background(), st.LatestSandbox().ID)
	h.calls()
	if err := h.s.KillPod(context.Background(), nil, st, nil); err != nil {
		t.Fatalf("KillPod of vanished orphan: %v", err)
	}
	for _, grace := range h.rt.stops {
		if grace != 7*time.Second {
			t.Errorf("orphan stopped with grace %v, want the stamped 7s", grace)
		}
	}
}

func TestRemovePod(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	h.sync(pod)
	ctx := context.Background()
	if err := h.s.RemovePod(ctx, h.rt.status(pod.UID)); !errors.Is(err, ErrStillRunning) {
		t.Fatalf("RemovePod of a running pod = %v, want ErrStillRunning", err)
	}
	if err := h.s.KillPod(ctx, pod, h.rt.status(pod.UID), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.s.RemovePod(ctx, h.rt.status(pod.UID)); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if st := h.rt.status(pod.UID); len(st.Sandboxes)+len(st.Containers) != 0 {
		t.Errorf("left behind: %+v", st)
	}
}

func statDir(p string) (bool, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// TestSyncPodAbandonedImagePull: a sync that ends while its image check or
// pull is under way (it failed elsewhere, or the pod went away) reports no
// image failure: no Failed event (the e2e suite takes reason Failed for a
// container that could not be created), no waiting reason and no back-off,
// so the next sync pulls again at once.
func TestSyncPodAbandonedImagePull(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.Containers[0].Image = "nginx:1.2"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.rt.pullErr = ctx.Err()
	res := h.s.SyncPod(ctx, pod, h.rt.status(pod.UID))
	if res.Err == nil || res.Waiting["a"].Reason != "" || res.RetryAfter != 0 {
		t.Fatalf("abandoned sync: %+v, want an error and no waiting reason or back-off", res)
	}
	for _, e := range h.takeEvents() {
		if strings.HasPrefix(e, "Warning") {
			t.Errorf("abandoned sync recorded %q", e)
		}
	}
	h.rt.pullErr = nil
	if res := h.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("next sync is not in back-off and pulls: %+v", res)
	}
}

// TestFinishedPodStopsOnce: the sync that finds a pod's containers all done
// stops it and says which sandbox it stopped; with that known, InSync
// counts the finished pod as settled, so its worker stops syncing it. A
// sandbox nobody stopped (the pod never stopped by this process) is not.
func TestFinishedPodStopsOnce(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	h.sync(pod)
	h.rt.exit("a", 0)
	h.rt.takeCalls()
	res := h.sync(pod)
	_, rest := h.calls()
	st := h.rt.status(pod.UID)
	sb := st.LatestSandbox()
	if res.Err != nil || sb == nil || res.Stopped != sb.ID || !slices.Contains(rest, "StopPodSandbox "+sb.ID) {
		t.Fatalf("stopping the finished pod: result %+v, calls %q", res, rest)
	}
	if !h.s.InSync(pod, st, res.Stopped) {
		t.Error("the stopped finished pod is not in sync")
	}
	if h.s.InSync(pod, st, "") {
		t.Error("a finished pod whose stop is not known counts as in sync")
	}
}
