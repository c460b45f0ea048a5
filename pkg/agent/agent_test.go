package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
	"github.com/nodelet/nodelet/pkg/status"
	"github.com/nodelet/nodelet/pkg/worker"
)

// fakeRuntime runs "containers" as map entries.
type fakeRuntime struct {
	mu      sync.Mutex
	running map[types.UID]bool
	killed  map[types.UID]int
	synced  map[types.UID]int
	reads   map[types.UID]int // PodStatus calls
	// finished pods ran to completion: their sandbox is not ready, their
	// container exited, and SyncPod stops them (counted in synced).
	finished map[types.UID]bool
	// gate, when set, holds SyncPod until it is closed (a long pull).
	gate chan struct{}
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{running: map[types.UID]bool{}, killed: map[types.UID]int{}, synced: map[types.UID]int{}, reads: map[types.UID]int{},
		finished: map[types.UID]bool{}}
}

func (f *fakeRuntime) PodStatus(_ context.Context, uid types.UID, name, ns string) (*runtime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[uid]++
	s := &runtime.PodStatus{UID: uid, Name: name, Namespace: ns}
	if f.finished[uid] {
		s.Sandboxes = []*runtime.SandboxStatus{{ID: "sb", State: runtime.SandboxStateNotReady}}
		s.Containers = []*runtime.ContainerStatus{{ID: "c", Name: "app", State: runtime.ContainerStateExited}}
	} else if f.running[uid] {
		s.Sandboxes = []*runtime.SandboxStatus{{ID: "sb", State: runtime.SandboxStateReady}}
		s.Containers = []*runtime.ContainerStatus{{ID: "c", Name: "app", State: runtime.ContainerStateRunning}}
	}
	return s, nil
}

func (f *fakeRuntime) SyncPod(_ context.Context, p *v1.Pod, _ *runtime.PodStatus) runtime.SyncResult {
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced[p.UID]++
	if f.finished[p.UID] {
		return runtime.SyncResult{Stopped: "sb"}
	}
	f.running[p.UID] = true
	return runtime.SyncResult{}
}

func (f *fakeRuntime) KillPod(_ context.Context, _ *v1.Pod, s *runtime.PodStatus, _ *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[s.UID] = false
	f.killed[s.UID]++
	return nil
}

func (f *fakeRuntime) RemovePod(context.Context, *runtime.PodStatus) error { return nil }

func (f *fakeRuntime) PodEvent(*v1.Pod, string, string, string) {}

func (f *fakeRuntime) InSync(p *v1.Pod, s *runtime.PodStatus, stopped string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finished[p.UID] {
		return plan.StopDone(s, stopped)
	}
	return len(s.Containers) > 0
}

func (f *fakeRuntime) count(m map[types.UID]int, uid types.UID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[uid]
}

type fakeRelister struct {
	mu       sync.Mutex
	changed  chan pleg.Change
	snapshot []*runtime.Pod
	began    time.Time // when the snapshot's listing began; zero: none yet
	// fingerprints of the snapshot's pods, for Listed.
	fingerprints map[types.UID]string
}

func (r *fakeRelister) Listed(uid types.UID) (string, time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fp, ok := r.fingerprints[uid]
	return fp, r.began, ok
}

func (r *fakeRelister) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (r *fakeRelister) Changed() <-chan pleg.Change   { return r.changed }

// Absent: the fake's listing began at began and shows the snapshot's pods.
func (r *fakeRelister) Absent(uid types.UID, since time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.listedSinceLocked(since) {
		return false
	}
	for _, p := range r.snapshot {
		if p.UID == uid {
			return false
		}
	}
	return true
}

func (r *fakeRelister) ListedSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listedSinceLocked(t)
}

func (r *fakeRelister) listedSinceLocked(t time.Time) bool {
	return !r.began.IsZero() && r.began.After(t)
}

func (r *fakeRelister) Snapshot() []*runtime.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot
}

func staticPod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default",
			Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.FileSource}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// mustNew builds an agent for a test.
func mustNew(t *testing.T, cfg Config, deps Deps) *Agent {
	t.Helper()
	a, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAgentRunsAndRemovesPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	updates := make(chan config.PodUpdate, 10)
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates, Sources: sets.New(pod.FileSource, pod.HTTPSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()

	if missing := a.SourcesReady(); len(missing) != 2 {
		t.Fatalf("sources ready before any update: missing %v", missing)
	}
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.HTTPSource} // empty source
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("a")}}
	poll.Eventually(t, "pod running in status", func() bool {
		ps := a.Pods()
		return len(ps) == 1 && ps[0].Status.Phase == v1.PodRunning
	})
	if missing := a.SourcesReady(); len(missing) != 0 {
		t.Fatalf("missing sources %v", missing)
	}

	updates <- config.PodUpdate{Op: config.REMOVE, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("a")}}
	poll.Eventually(t, "pod killed", func() bool { return rt.count(rt.killed, "a") == 1 })
	poll.Eventually(t, "pod gone from /pods", func() bool { return len(a.Pods()) == 0 })
	if _, ok := a.statuses.Get("a"); ok {
		poll.Eventually(t, "status forgotten", func() bool { _, ok := a.statuses.Get("a"); return !ok })
	}
	cancel()
	<-done
}

func TestLeftovers(t *testing.T) {
	a := mustNew(t, Config{}, Deps{Runtime: newFakeRuntime(), Relister: &fakeRelister{}, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource, pod.ApiserverSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.workers = worker.New(ctx, func(context.Context, worker.Work) worker.Result { return worker.Result{} }, worker.Options{})
	a.killer = worker.NewKiller(ctx, func(context.Context, *runtime.Pod) error { return nil })
	a.pods.AddOrUpdatePod(staticPod("wanted"))
	a.markSeen(pod.FileSource) // the API source never shows up

	rp := func(uid, source string) *runtime.Pod {
		return &runtime.Pod{UID: types.UID(uid), Source: source, Sandboxes: []runtime.SandboxRef{{ID: uid, State: runtime.SandboxStateReady}}}
	}
	listing := []*runtime.Pod{
		rp("wanted", pod.FileSource),
		rp("removed-file", pod.FileSource),      // its source is ready: kill
		rp("api-pod", pod.ApiserverSource),      // its source is not ready yet: keep
		rp("unknown", ""),                       // unknown source, not all ready: keep
		rp("from-unconfigured", pod.HTTPSource), // no such source any more: kill
		{UID: "dead", Source: pod.FileSource, Sandboxes: []runtime.SandboxRef{{ID: "x", State: runtime.SandboxStateNotReady}}}, // GC's job
	}
	got := sets.New[types.UID]()
	for _, p := range a.leftovers(listing) {
		got.Insert(p.UID)
	}
	want := sets.New[types.UID]("removed-file", "from-unconfigured")
	if !got.Equal(want) {
		t.Fatalf("leftovers %v, want %v", sets.List(got), sets.List(want))
	}
	a.markSeen(pod.ApiserverSource)
	got = sets.New[types.UID]()
	for _, p := range a.leftovers(listing) {
		got.Insert(p.UID)
	}
	if !got.Has("unknown") || !got.Has("api-pod") || got.Has("wanted") {
		t.Fatalf("with all sources ready: %v", sets.List(got))
	}
}

// TestRelistEventsAlreadyObserved: a relist showing what the worker itself
// started does not sync the pod again; one showing a change does.
func TestRelistEventsAlreadyObserved(t *testing.T) {
	rt := newFakeRuntime()
	a := mustNew(t, Config{}, Deps{Runtime: rt, Relister: &fakeRelister{}, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	ctx := context.Background()
	p := staticPod("a")
	later := time.Now().Add(time.Hour)
	steps := []struct {
		name        string
		work        worker.Work
		wantSyncs   int
		wantSkipped bool
	}{
		{"create", worker.Work{Pod: p, Type: worker.Create}, 1, false},
		{"relist of the started pod", worker.Work{Pod: p, Type: worker.Sync,
			Relisted: &worker.Relisted{Fingerprint: "s:sb=ready;c:c=running;", At: later}}, 1, true},
		{"relist of an exit", worker.Work{Pod: p, Type: worker.Sync,
			Relisted: &worker.Relisted{Fingerprint: "s:sb=ready;c:c=exited;", At: later}}, 2, false},
		{"other sync", worker.Work{Pod: p, Type: worker.Sync}, 3, false},
	}
	for _, s := range steps {
		res := a.syncPod(ctx, s.work)
		if res.Skipped != s.wantSkipped || rt.count(rt.synced, "a") != s.wantSyncs {
			t.Errorf("%s: skipped %v, syncs %d; want %v, %d", s.name, res.Skipped, rt.count(rt.synced, "a"), s.wantSkipped, s.wantSyncs)
		}
	}
}

// TestCreateOfPodNewToTheRuntime: the first sync of a pod that a listing
// begun after anything done for it does not show skips the status read
// before acting; in every other case the status is read first.
func TestCreateOfPodNewToTheRuntime(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// listing: how the relister's listing relates to the pod.
		listingBegan time.Duration // relative to the test start; 0: no listing
		listed       bool
		actedBefore  bool // a sync of the pod ended just before the test
		typ          worker.UpdateType
		wantReads    int // PodStatus calls: before and after the sync
	}{
		{"new pod, fresh listing", time.Hour, false, false, worker.Create, 1},
		{"no listing yet", 0, false, false, worker.Create, 2},
		{"pod in the listing", time.Hour, true, false, worker.Create, 2},
		{"listing older than the last sync of the pod", -time.Hour, false, true, worker.Create, 2},
		{"not a create", time.Hour, false, false, worker.Update, 2},
	}
	start := time.Now()
	for _, tc := range tests {
		rt := newFakeRuntime()
		rl := &fakeRelister{}
		if tc.listingBegan != 0 {
			rl.began = start.Add(tc.listingBegan)
		}
		if tc.listed {
			rl.snapshot = []*runtime.Pod{{UID: "a"}}
		}
		a := mustNew(t, Config{}, Deps{Runtime: rt, Relister: rl, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
		if tc.actedBefore {
			a.observed.acted("a", start)
		}
		a.syncPod(ctx, worker.Work{Pod: staticPod("a"), Type: tc.typ})
		if got := rt.count(rt.reads, "a"); got != tc.wantReads || rt.count(rt.synced, "a") != 1 {
			t.Errorf("%s: %d status reads, %d syncs; want %d, 1", tc.name, got, rt.count(rt.synced, "a"), tc.wantReads)
		}
	}
}

// TestSlowFirstSyncPublishesPendingStatus: while a new pod's first sync
// runs long (an image pull), its status already shows the pod Pending with
// the container in ContainerCreating; the finished sync's status follows.
func TestSlowFirstSyncPublishesPendingStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	rt.gate = make(chan struct{})
	updates := make(chan config.PodUpdate, 10)
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates, Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	a.slowFirstSync = 10 * time.Millisecond
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("slow")}}
	poll.Eventually(t, "pending status during the sync", func() bool {
		st, ok := a.statuses.Get("slow")
		if !ok || st.Phase != v1.PodPending || len(st.ContainerStatuses) != 1 {
			return false
		}
		w := st.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ContainerCreating"
	})
	close(rt.gate)
	poll.Eventually(t, "running status after the sync", func() bool {
		st, ok := a.statuses.Get("slow")
		return ok && st.Phase == v1.PodRunning
	})
	cancel()
	<-done
}

// TestPeriodicResyncOfUnchangedPod: the periodic resync of a pod whose last
// sync left nothing to do, and which a later listing shows as it was, reads
// nothing and syncs nothing; any change, an older listing or another reason
// to sync makes it a full sync.
func TestPeriodicResyncOfUnchangedPod(t *testing.T) {
	ctx := context.Background()
	const runningFP = "s:sb=ready;c:c=running;"
	tests := []struct {
		name        string
		fingerprint string // in the listing; "" not listed
		listingAge  time.Duration
		periodic    bool
		wantSync    bool
	}{
		{"unchanged", runningFP, -time.Hour, true, false},
		{"container exited", "s:sb=ready;c:c=exited;", -time.Hour, true, true},
		{"not in the listing", "", -time.Hour, true, true},
		{"listing older than the last read", runningFP, time.Hour, true, true},
		{"not periodic", runningFP, -time.Hour, false, true},
	}
	for _, tc := range tests {
		rt := newFakeRuntime()
		rl := &fakeRelister{fingerprints: map[types.UID]string{}}
		cl := &statusRecorder{}
		a := mustNew(t, Config{}, Deps{Runtime: rt, Relister: rl, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
			Cluster: cl})
		p := staticPod("a")
		a.syncPod(ctx, worker.Work{Pod: p, Type: worker.Create})
		reads, syncs, statuses, mirrors := rt.count(rt.reads, "a"), rt.count(rt.synced, "a"), len(cl.all()), cl.mirrors
		rl.mu.Lock()
		rl.began = time.Now().Add(-tc.listingAge)
		if tc.fingerprint != "" {
			rl.fingerprints["a"] = tc.fingerprint
		}
		rl.mu.Unlock()
		res := a.syncPod(ctx, worker.Work{Pod: p, Type: worker.Sync, Periodic: tc.periodic})
		synced := rt.count(rt.synced, "a") > syncs
		if synced != tc.wantSync || res.Skipped || res.Err != nil {
			t.Errorf("%s: synced %v (result %+v), want %v", tc.name, synced, res, tc.wantSync)
		}
		if !tc.wantSync && (rt.count(rt.reads, "a") != reads || len(cl.all()) != statuses) {
			t.Errorf("%s: a skipped resync read the runtime or published a status", tc.name)
		}
		if cl.mirrors != mirrors+1 {
			t.Errorf("%s: the static pod's mirror was not synced", tc.name)
		}
	}
}

// TestFinishedPodStoppedOnce: a pod that ran to completion is stopped by the
// sync that finds it so; later syncs read its state and publish it, but do
// not stop it again, and its periodic resyncs do nothing at all.
func TestFinishedPodStoppedOnce(t *testing.T) {
	ctx := context.Background()
	rt := newFakeRuntime()
	rl := &fakeRelister{fingerprints: map[types.UID]string{}}
	a := mustNew(t, Config{}, Deps{Runtime: rt, Relister: rl, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	p := staticPod("a")
	a.syncPod(ctx, worker.Work{Pod: p, Type: worker.Create})
	rt.mu.Lock()
	rt.finished["a"] = true
	rt.mu.Unlock()
	a.syncPod(ctx, worker.Work{Pod: p, Type: worker.Sync})
	if n := rt.count(rt.synced, "a"); n != 2 {
		t.Fatalf("the finished pod was not stopped: %d syncs", n)
	}
	for _, w := range []worker.Work{{Pod: p, Type: worker.Sync}, {Pod: p, Type: worker.Update}} {
		reads := rt.count(rt.reads, "a")
		a.syncPod(ctx, w)
		if n := rt.count(rt.synced, "a"); n != 2 {
			t.Errorf("%v sync stopped the finished pod again", w.Type)
		}
		if rt.count(rt.reads, "a") != reads+1 {
			t.Errorf("%v sync of the finished pod: %d reads, want 1", w.Type, rt.count(rt.reads, "a")-reads)
		}
		if _, ok := a.statuses.Get("a"); !ok {
			t.Errorf("%v sync published no status", w.Type)
		}
	}
	rl.mu.Lock()
	rl.began, rl.fingerprints["a"] = time.Now().Add(time.Hour), "s:sb=notready;c:c=exited;"
	rl.mu.Unlock()
	reads := rt.count(rt.reads, "a")
	a.syncPod(ctx, worker.Work{Pod: p, Type: worker.Sync, Periodic: true})
	if rt.count(rt.reads, "a") != reads || rt.count(rt.synced, "a") != 2 {
		t.Errorf("the periodic resync of the finished pod did work")
	}
	// A kill (the pod deleted) does not stop it again either.
	a.syncPod(ctx, worker.Work{Pod: p, Type: worker.Kill})
	if n := rt.count(rt.killed, "a"); n != 0 {
		t.Errorf("the kill of the stopped pod stopped it again (%d kills)", n)
	}
}
