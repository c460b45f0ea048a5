package pleg

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, cur map[types.UID]string
		want     []types.UID
	}{
		{"same", map[types.UID]string{"a": "x"}, map[types.UID]string{"a": "x"}, nil},
		{"changed", map[types.UID]string{"a": "x"}, map[types.UID]string{"a": "y"}, []types.UID{"a"}},
		{"appeared", map[types.UID]string{}, map[types.UID]string{"a": "x"}, []types.UID{"a"}},
		{"vanished", map[types.UID]string{"a": "x"}, map[types.UID]string{}, []types.UID{"a"}},
	}
	for _, tc := range tests {
		got := Diff(tc.old, tc.cur)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
}

type fakeLister struct {
	mu   sync.Mutex
	pods []*runtime.Pod
}

func (f *fakeLister) ListPods(context.Context) ([]*runtime.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods, nil
}

func (f *fakeLister) set(p ...*runtime.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = p
}

func TestRelisterReportsOnlyChangedPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := func(uid types.UID, st runtime.ContainerState) *runtime.Pod {
		return &runtime.Pod{UID: uid, Containers: []runtime.ContainerRef{{ID: string(uid) + "-c", State: st}}}
	}
	l := &fakeLister{}
	l.set(running("a", runtime.ContainerStateRunning), running("b", runtime.ContainerStateRunning))
	m := &fakeMetrics{}
	r := New(l, 5*time.Millisecond, m)
	go r.Run(ctx)

	got := map[types.UID]bool{}
	for range 2 {
		got[(<-r.Changed()).UID] = true
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("initial listing reported %v", got)
	}
	l.set(running("a", runtime.ContainerStateRunning), running("b", runtime.ContainerStateExited))
	select {
	case c := <-r.Changed():
		if c.UID != "b" || c.Fingerprint != "c:b-c=exited;" || c.ListedAt.IsZero() {
			t.Fatalf("reported %+v, want b exited", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exit not noticed")
	}
	select {
	case c := <-r.Changed():
		t.Fatalf("spurious change for %s", c.UID)
	case <-time.After(50 * time.Millisecond):
	}
	if err := r.Healthy(); err != nil {
		t.Fatal(err)
	}
	if len(r.Snapshot()) != 2 {
		t.Fatalf("snapshot has %d pods", len(r.Snapshot()))
	}
	// Every relist is observed; only the first has no interval, and the
	// intervals run from start to start.
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.obs) < 3 || m.obs[0].interval != 0 || !m.obs[0].ok {
		t.Fatalf("observed %+v", m.obs)
	}
	for i := 1; i < len(m.obs); i++ {
		if want := m.obs[i].began.Sub(m.obs[i-1].began); m.obs[i].interval != want || m.obs[i].d < 0 {
			t.Errorf("relist %d: %+v, interval want %v", i, m.obs[i], want)
		}
	}
}

type relistObs struct {
	began       time.Time
	d, interval time.Duration
	ok          bool
}

type fakeMetrics struct {
	mu  sync.Mutex
	obs []relistObs
}

func (f *fakeMetrics) ObserveRelist(began time.Time, d, interval time.Duration, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs = append(f.obs, relistObs{began, d, interval, ok})
}

// TestFingerprints: a listing and a status read of the same runtime state
// fingerprint alike, and any instance or state change shows.
func TestFingerprints(t *testing.T) {
	listed := &runtime.Pod{
		Sandboxes:  []runtime.SandboxRef{{ID: "s1", State: runtime.SandboxStateReady}},
		Containers: []runtime.ContainerRef{{ID: "c2", State: runtime.ContainerStateRunning}, {ID: "c1", State: runtime.ContainerStateExited}},
	}
	status := func(sbState runtime.SandboxState, c2 string, c2State runtime.ContainerState) *runtime.PodStatus {
		return &runtime.PodStatus{
			Sandboxes:  []*runtime.SandboxStatus{{ID: "s1", State: sbState}},
			Containers: []*runtime.ContainerStatus{{ID: c2, State: c2State}, {ID: "c1", State: runtime.ContainerStateExited}},
		}
	}
	tests := []struct {
		name   string
		status *runtime.PodStatus
		same   bool
	}{
		{"same state", status(runtime.SandboxStateReady, "c2", runtime.ContainerStateRunning), true},
		{"container exited", status(runtime.SandboxStateReady, "c2", runtime.ContainerStateExited), false},
		{"new instance", status(runtime.SandboxStateReady, "c3", runtime.ContainerStateRunning), false},
		{"sandbox died", status(runtime.SandboxStateNotReady, "c2", runtime.ContainerStateRunning), false},
	}
	for _, tc := range tests {
		if got := StatusFingerprint(tc.status) == Fingerprint(listed); got != tc.same {
			t.Errorf("%s: equal = %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestAbsent: a pod counts as absent only by a listing that began after the
// given time and did not show it.
func TestAbsent(t *testing.T) {
	l := &fakeLister{}
	l.set(&runtime.Pod{UID: "there"})
	r := New(l, time.Second, nil)
	before := time.Now()
	if r.Absent("new", time.Time{}) || r.ListedSince(time.Time{}) {
		t.Fatal("absent before any listing")
	}
	r.relist(context.Background(), listing{})
	after := time.Now()
	tests := []struct {
		name  string
		uid   types.UID
		since time.Time
		want  bool
	}{
		{"not listed, listing newer", "new", before, true},
		{"listed", "there", before, false},
		{"not listed, but listing older", "new", after, false},
	}
	for _, tc := range tests {
		if got := r.Absent(tc.uid, tc.since); got != tc.want {
			t.Errorf("%s: Absent = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !r.ListedSince(before) || r.ListedSince(after) {
		t.Error("ListedSince does not follow the listing's start")
	}
}

// TestListingReusesFingerprints: a pod the lister hands out again (the same
// *runtime.Pod: cristatus.PodsCache's unchanged pod) is not fingerprinted
// again; a new one is.
func TestListingReusesFingerprints(t *testing.T) {
	same := &runtime.Pod{UID: "same", Containers: []runtime.ContainerRef{{ID: "c", State: runtime.ContainerStateRunning}}}
	// Same content, new pod: fingerprinted anew.
	renewed := &runtime.Pod{UID: "renewed", Containers: []runtime.ContainerRef{{ID: "d", State: runtime.ContainerStateRunning}}}
	last := listing{byPod: map[*runtime.Pod]string{same: "from-last", {UID: "renewed"}: "from-last"}}
	l := newListing([]*runtime.Pod{same, renewed}, last)
	if l.byUID["same"] != "from-last" {
		t.Errorf("reused pod fingerprinted again: %q", l.byUID["same"])
	}
	if l.byUID["renewed"] != Fingerprint(renewed) {
		t.Errorf("new pod not fingerprinted: %q", l.byUID["renewed"])
	}
	if !l.listed["same"] || !l.listed["renewed"] || len(l.listed) != 2 {
		t.Errorf("listed = %v", l.listed)
	}
}

// TestRelistOfSameListing: a listing that is the previous one, pod for pod,
// reports nothing and still counts as a fresh listing.
func TestRelistOfSameListing(t *testing.T) {
	p := &runtime.Pod{UID: "a", Containers: []runtime.ContainerRef{{ID: "c", State: runtime.ContainerStateRunning}}}
	l := &fakeLister{}
	l.set(p)
	r := New(l, time.Second, nil)
	last := r.relist(context.Background(), listing{})
	if c := <-r.Changed(); c.UID != "a" {
		t.Fatalf("first listing reported %v", c)
	}
	before := time.Now()
	r.relist(context.Background(), last)
	select {
	case c := <-r.Changed():
		t.Fatalf("unchanged listing reported %v", c)
	default:
	}
	if !r.ListedSince(before) || r.Absent("a", before) || !r.Absent("b", before) {
		t.Error("the unchanged listing does not count as the latest")
	}
}
