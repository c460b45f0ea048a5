package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

type fakeRuntime struct {
	mu         sync.Mutex
	containers map[string]*runtimeapi.Container
	logPaths   map[string]string
	finished   map[string]time.Time
	sandboxes  map[string]*runtimeapi.PodSandbox
	calls      []string
	failRemove map[string]error
}

var _ Runtime = (*fakeRuntime)(nil)

// The one CRI client is what nodelet wires in.
var _ Runtime = (*cri.Client)(nil)

func newFake() *fakeRuntime {
	return &fakeRuntime{containers: map[string]*runtimeapi.Container{}, logPaths: map[string]string{}, finished: map[string]time.Time{},
		sandboxes: map[string]*runtimeapi.PodSandbox{}, failRemove: map[string]error{}}
}

func (f *fakeRuntime) addContainer(id, uid, name string, attempt uint32, state runtimeapi.ContainerState, created time.Time, sb string) {
	f.containers[id] = &runtimeapi.Container{Id: id, PodSandboxId: sb, State: state, CreatedAt: created.UnixNano(),
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Labels:   map[string]string{cri.LabelPodUID: uid}}
}

func (f *fakeRuntime) addSandbox(id, uid string, attempt uint32, ready bool, created time.Time) {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	f.sandboxes[id] = &runtimeapi.PodSandbox{Id: id, State: st, CreatedAt: created.UnixNano(),
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid, Attempt: attempt}}
}

func (f *fakeRuntime) record(s string) { f.calls = append(f.calls, s) }

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		out = append(out, c)
	}
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.containers[id]; !ok {
		return nil, fmt.Errorf("container status %s: %w", id, cri.ErrNotFound)
	}
	return &runtimeapi.ContainerStatus{Id: id, LogPath: f.logPaths[id], FinishedAt: f.finished[id].UnixNano()}, nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("stop " + id)
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failRemove[id]; err != nil {
		return err
	}
	f.record("rm " + id)
	delete(f.containers, id)
	return nil
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("stopp " + id)
	return nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.PodSandboxId == id {
			return errors.New("sandbox " + id + " still has containers")
		}
	}
	f.record("rmp " + id)
	delete(f.sandboxes, id)
	return nil
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func TestGarbageCollect(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	logs := t.TempDir()
	f := newFake()
	exited := runtimeapi.ContainerState_CONTAINER_EXITED
	// Pod "keep": app restarted twice; a0 and a1 dead, a2 running.
	f.addSandbox("ks", "keep", 0, true, now.Add(-time.Hour))
	f.addContainer("a0", "keep", "app", 0, exited, now.Add(-50*time.Minute), "ks")
	f.addContainer("a1", "keep", "app", 1, exited, now.Add(-40*time.Minute), "ks")
	f.addContainer("a2", "keep", "app", 2, runtimeapi.ContainerState_CONTAINER_RUNNING, now.Add(-30*time.Minute), "ks")
	// Pod "gone": removed from the node; one dead container, one in unknown state.
	f.addSandbox("gs", "gone", 0, false, now.Add(-time.Hour))
	f.addContainer("g0", "gone", "web", 0, exited, now.Add(-50*time.Minute), "gs")
	f.addContainer("gu", "gone", "side", 0, runtimeapi.ContainerState_CONTAINER_UNKNOWN, now.Add(-50*time.Minute), "gs")
	// A container not created for a pod: left alone.
	f.containers["foreign"] = &runtimeapi.Container{Id: "foreign", State: exited, Metadata: &runtimeapi.ContainerMetadata{Name: "x"}}

	for id, p := range map[string]string{
		"a0": "ns_keep_keep/app/0.log", "a1": "ns_keep_keep/app/1.log", "g0": "ns_gone_gone/web/0.log",
	} {
		f.logPaths[id] = filepath.Join(logs, p)
		touch(t, filepath.Join(logs, p))
	}
	touch(t, filepath.Join(logs, "ns_keep_keep/app/0.log.20260101-000000"))
	touch(t, filepath.Join(logs, "ns_keep_keep/app/0.log.20260101-000000.gz"))
	// A log path outside the pod logs dir is never deleted.
	outside := filepath.Join(t.TempDir(), "elsewhere.log")
	touch(t, outside)
	f.logPaths["gu"] = outside

	reg := prometheus.NewRegistry()
	g, err := New(Config{Runtime: f, Policy: DefaultPolicy(), PodLogsDir: logs, Registerer: reg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	wanted := func(uid types.UID) bool { return uid == "keep" }
	res, err := g.GarbageCollect(context.Background(), wanted)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range res.Containers {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if strings.Join(ids, ",") != "a0,g0,gu" {
		t.Errorf("removed containers %v", ids)
	}
	if len(res.Sandboxes) != 1 || res.Sandboxes[0].ID != "gs" {
		t.Errorf("removed sandboxes %+v", res.Sandboxes)
	}
	if !slices.Contains(f.calls, "stop gu") || !slices.Contains(f.calls, "stopp gs") {
		t.Errorf("calls %v: unknown container and sandbox not stopped first", f.calls)
	}
	for _, id := range []string{"a1", "a2", "foreign"} {
		if _, ok := f.containers[id]; !ok {
			t.Errorf("%s removed", id)
		}
	}
	if exists(filepath.Join(logs, "ns_keep_keep/app/0.log")) || exists(filepath.Join(logs, "ns_keep_keep/app/0.log.20260101-000000.gz")) {
		t.Errorf("log of a0 (or a rotated one) left")
	}
	if !exists(filepath.Join(logs, "ns_keep_keep/app/1.log")) {
		t.Errorf("log of the kept dead instance removed: --previous would break")
	}
	if exists(filepath.Join(logs, "ns_gone_gone")) {
		t.Errorf("pod log dir of the removed pod left")
	}
	if !exists(outside) {
		t.Errorf("log outside the pod logs dir removed")
	}
	if len(res.LogDirs) != 1 || res.LogDirs[0] != "ns_gone_gone" {
		t.Errorf("log dirs %v", res.LogDirs)
	}
	mfs, _ := reg.Gather()
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.Counter != nil {
				got[mf.GetName()] = m.Counter.GetValue()
			}
		}
	}
	if got["nodelet_container_gc_containers_removed_total"] != 3 || got["nodelet_container_gc_sandboxes_removed_total"] != 1 || got["nodelet_container_gc_pod_log_dirs_removed_total"] != 1 {
		t.Errorf("metrics %v", got)
	}

	// A second pass with nothing to do does nothing.
	f.calls = nil
	if res, err := g.GarbageCollect(context.Background(), wanted); err != nil || len(res.Containers)+len(res.Sandboxes)+len(res.LogDirs) != 0 || len(f.calls) != 0 {
		t.Errorf("second pass: %+v %v %v", res, err, f.calls)
	}
}

func TestGarbageCollectNilWantedKeepsPods(t *testing.T) {
	now := time.Now()
	f := newFake()
	f.addSandbox("s", "p", 0, false, now.Add(-time.Hour))
	f.addContainer("c0", "p", "app", 0, runtimeapi.ContainerState_CONTAINER_EXITED, now.Add(-time.Hour), "s")
	f.addContainer("c1", "p", "app", 1, runtimeapi.ContainerState_CONTAINER_EXITED, now.Add(-time.Minute), "s")
	logs := t.TempDir()
	touch(t, filepath.Join(logs, "ns_p_p", "app", "1.log"))
	g, err := New(Config{Runtime: f, Policy: DefaultPolicy(), PodLogsDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.GarbageCollect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Containers) != 1 || res.Containers[0].ID != "c0" || len(res.Sandboxes) != 0 || len(res.LogDirs) != 0 {
		t.Errorf("%+v", res)
	}
}

func TestGarbageCollectFailureKeepsSandbox(t *testing.T) {
	now := time.Now()
	f := newFake()
	f.addSandbox("s", "gone", 0, false, now.Add(-time.Hour))
	f.addContainer("c0", "gone", "app", 0, runtimeapi.ContainerState_CONTAINER_EXITED, now.Add(-time.Hour), "s")
	f.addContainer("c1", "gone", "b", 0, runtimeapi.ContainerState_CONTAINER_EXITED, now.Add(-time.Hour), "s")
	f.failRemove["c0"] = errors.New("device busy")
	f.failRemove["c1"] = fmt.Errorf("remove container c1: %w", cri.ErrNotFound)
	reg := prometheus.NewRegistry()
	g, err := New(Config{Runtime: f, Policy: DefaultPolicy(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.GarbageCollect(context.Background(), func(types.UID) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "removing container c0 (pod gone, app)") {
		t.Errorf("err = %v", err)
	}
	if len(res.Containers) != 1 || res.Containers[0].ID != "c1" {
		t.Errorf("removed %+v", res.Containers)
	}
	if len(res.Sandboxes) != 0 || slices.Contains(f.calls, "stopp s") {
		t.Errorf("sandbox touched although a container of its pod could not be removed: %v", f.calls)
	}
}

func TestGarbageCollectMinAgeUsesFinishTime(t *testing.T) {
	now := time.Now()
	f := newFake()
	f.addContainer("recent", "gone", "app", 0, runtimeapi.ContainerState_CONTAINER_EXITED, now.Add(-time.Hour), "")
	f.finished["recent"] = now.Add(-10 * time.Second)
	f.addContainer("old", "gone", "b", 0, runtimeapi.ContainerState_CONTAINER_EXITED, now.Add(-time.Hour), "")
	f.finished["old"] = now.Add(-2 * time.Minute)
	g, err := New(Config{Runtime: f, Policy: Policy{MinAge: time.Minute, MaxPerPodContainer: 1, MaxContainers: -1}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.GarbageCollect(context.Background(), func(types.UID) bool { return false })
	if err != nil || len(res.Containers) != 1 || res.Containers[0].ID != "old" {
		t.Errorf("%+v %v", res, err)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Config{Policy: DefaultPolicy()}); err == nil {
		t.Error("nil runtime accepted")
	}
	if _, err := New(Config{Runtime: newFake(), Policy: Policy{MinAge: -1}}); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("err = %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Runtime: newFake(), Policy: DefaultPolicy(), Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Runtime: newFake(), Policy: DefaultPolicy(), Registerer: reg}); err == nil {
		t.Error("double registration accepted")
	}
}
