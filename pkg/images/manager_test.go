package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// fakeRuntime is an image store on a fake filesystem: used bytes are base
// plus, per image, its freed bytes (its size unless overridden).
type fakeRuntime struct {
	mu         sync.Mutex
	capacity   uint64
	base       uint64
	images     map[string]*runtimeapi.Image
	frees      map[string]uint64 // bytes actually freed on removal, if not Size
	containers []*runtimeapi.Container
	removed    []string
	removeErr  map[string]error
	fsErr      error
	// listContainersHook, when set, answers ListContainers (call counts from 1).
	listContainersHook func(call int) []*runtimeapi.Container
	listCalls          int
}

var _ Runtime = (*fakeRuntime)(nil)

// The one CRI client is what nodelet wires in.
var _ Runtime = (*cri.Client)(nil)

func newFake(capacity, base uint64, imgs ...*runtimeapi.Image) *fakeRuntime {
	f := &fakeRuntime{capacity: capacity, base: base, images: map[string]*runtimeapi.Image{}, frees: map[string]uint64{}, removeErr: map[string]error{}}
	for _, img := range imgs {
		f.images[img.Id] = img
	}
	return f
}

func (f *fakeRuntime) used() uint64 {
	u := f.base
	for id, img := range f.images {
		if b, ok := f.frees[id]; ok {
			u += b
		} else {
			u += img.Size
		}
	}
	return u
}

func (f *fakeRuntime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range f.images {
		out = append(out, img)
	}
	return out, nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.removeErr[ref]; err != nil {
		return err
	}
	if _, ok := f.images[ref]; !ok {
		return fmt.Errorf("remove image %s: %w", ref, cri.ErrNotFound)
	}
	delete(f.images, ref)
	f.removed = append(f.removed, ref)
	return nil
}

func (f *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fsErr != nil {
		return nil, f.fsErr
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId:      &runtimeapi.FilesystemIdentifier{Mountpoint: "/fake"},
		UsedBytes: &runtimeapi.UInt64Value{Value: f.used() - f.base},
	}}}, nil
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	if f.listContainersHook != nil {
		return f.listContainersHook(f.listCalls), nil
	}
	return f.containers, nil
}

func (f *fakeRuntime) statfs(path string) (uint64, uint64, error) {
	if path != "/fake" {
		return 0, 0, errors.New("wrong path " + path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.capacity, f.capacity - min(f.used(), f.capacity), nil
}

func img(id, tag string, size uint64) *runtimeapi.Image {
	return &runtimeapi.Image{Id: id, RepoTags: []string{tag}, Size: size}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestManager(t *testing.T, f *fakeRuntime, p Policy, c *clock) (*Manager, *record.FakeRecorder, *prometheus.Registry) {
	t.Helper()
	rec := record.NewFakeRecorder(10)
	reg := prometheus.NewRegistry()
	m, err := NewManager(Config{
		Runtime: f, Policy: p, SandboxImage: "registry.k8s.io/pause:3.10", Statfs: f.statfs,
		Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n1"}, Registerer: reg, Now: c.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, rec, reg
}

func noEvents(t *testing.T, rec *record.FakeRecorder) {
	t.Helper()
	select {
	case e := <-rec.Events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func ids(recs []ImageRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func TestGarbageCollectLRUAndProtections(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := newFake(100000, 400,
		img("sha256:pause", "registry.k8s.io/pause:3.10", 50),
		img("sha256:run", "docker.io/library/busybox:1.35", 100),
		img("sha256:a", "docker.io/library/a:1", 100),
		img("sha256:c", "docker.io/library/c:1", 100),
		img("sha256:b", "docker.io/library/b:1", 100),
	)
	running := &runtimeapi.Container{Id: "c1", ImageRef: "sha256:run", State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	f.containers = []*runtimeapi.Container{running}
	m, rec, reg := newTestManager(t, f, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MinAge: 2 * time.Minute}, c)
	ctx := context.Background()

	// Plenty of room: passes only record first-seen and use.
	if res, err := m.GarbageCollect(ctx); err != nil || res.Triggered || len(res.Removed) != 0 {
		t.Fatalf("quiet pass: %+v %v", res, err)
	}
	c.advance(time.Minute)
	f.containers = append(f.containers, &runtimeapi.Container{Id: "c2", Image: &runtimeapi.ImageSpec{Image: "a:1"}, State: runtimeapi.ContainerState_CONTAINER_EXITED})
	if _, err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	f.containers = []*runtimeapi.Container{running}
	c.advance(2 * time.Minute)
	f.images["sha256:fresh"] = img("sha256:fresh", "docker.io/library/fresh:1", 100)

	// 400 + 550 = 950 of 1000: 95 %. Below 80 % needs 151 bytes: b and c
	// (never used; same first seen, so by ID), not a (used a minute in),
	// not run (running), not pause (sandbox image), not fresh (too young).
	f.capacity = 1000
	res, err := m.GarbageCollect(ctx)
	if err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	if got := strings.Join(ids(res.Removed), ","); got != "sha256:b,sha256:c" {
		t.Errorf("removed %s, want sha256:b,sha256:c", got)
	}
	if !res.Triggered || res.Before.Used() != 950 || res.After.Used() != 750 || res.BytesFreed != 200 || res.Shortfall != 0 {
		t.Errorf("result %+v", res)
	}
	if m.DiskPressure() {
		t.Errorf("DiskPressure after freeing")
	}
	noEvents(t, rec)
	for name, want := range map[string]float64{
		"nodelet_image_gc_images_removed_total": 2,
		"nodelet_image_gc_bytes_freed_total":    200,
		"nodelet_image_gc_duration_seconds":     3, // passes observed
		"nodelet_image_fs_used_bytes":           750,
		"nodelet_image_fs_capacity_bytes":       1000,
	} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

func TestGarbageCollectShortfall(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	f := newFake(1000, 800,
		img("sha256:pause", "registry.k8s.io/pause:3.10", 50),
		img("sha256:pinned", "x/pinned:1", 50),
		img("sha256:run", "docker.io/library/busybox:1.35", 50),
		img("sha256:free", "docker.io/library/free:1", 20),
	)
	f.images["sha256:pinned"].Pinned = true
	f.containers = []*runtimeapi.Container{{Id: "c1", ImageRef: "sha256:run"}}
	m, rec, reg := newTestManager(t, f, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}, c)

	res, err := m.GarbageCollect(context.Background())
	if !errors.Is(err, ErrLowThresholdNotReached) {
		t.Fatalf("err = %v, want ErrLowThresholdNotReached", err)
	}
	if got := strings.Join(ids(res.Removed), ","); got != "sha256:free" {
		t.Errorf("removed %s", got)
	}
	// 970 -> 950; below 80 % means <= 799: 151 short.
	if res.Shortfall != 151 || res.After.Used() != 950 {
		t.Errorf("result %+v", res)
	}
	if !m.DiskPressure() {
		t.Errorf("DiskPressure false at 95 %%")
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning FreeDiskSpaceFailed ") || !strings.Contains(e, "95.0%") {
			t.Errorf("event %q", e)
		}
	default:
		t.Errorf("no FreeDiskSpaceFailed event")
	}
	if got := metricValue(t, reg, "nodelet_image_gc_failures_total", "reason", "low_threshold_not_reached"); got != 1 {
		t.Errorf("failures = %v", got)
	}
	for _, id := range []string{"sha256:pause", "sha256:pinned", "sha256:run"} {
		if _, ok := f.images[id]; !ok {
			t.Errorf("%s removed", id)
		}
	}
}

func TestGarbageCollectRechecksUseAndContinuesToLow(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	f := newFake(1000, 550,
		img("sha256:b", "b:1", 100), img("sha256:c", "c:1", 100), img("sha256:d", "d:1", 100), img("sha256:e", "e:1", 100))
	// From the second listing on (the re-check before removal), a container of
	// b exists: it was created after the plan was made.
	f.listContainersHook = func(call int) []*runtimeapi.Container {
		if call == 1 {
			return nil
		}
		return []*runtimeapi.Container{{Id: "new", Image: &runtimeapi.ImageSpec{Image: "b:1"}}}
	}
	m, _, _ := newTestManager(t, f, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}, c)
	res, err := m.GarbageCollect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Plan b, c (151 bytes); b skipped, c removed: 850, still >= 800, so a
	// second round removes d: 750.
	if got := strings.Join(ids(res.Removed), ","); got != "sha256:c,sha256:d" {
		t.Errorf("removed %s", got)
	}
	if _, ok := f.images["sha256:b"]; !ok {
		t.Errorf("b removed although a container was created from it")
	}
	if res.After.Used() != 750 {
		t.Errorf("after %d", res.After.Used())
	}
}

func TestGarbageCollectOverstatedSizes(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	f := newFake(1000, 700, img("sha256:x", "x:1", 200), img("sha256:y", "y:1", 100), img("sha256:z", "z:1", 100))
	f.frees["sha256:x"] = 50 // shares layers: removing it frees only 50
	m, _, _ := newTestManager(t, f, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}, c)
	res, err := m.GarbageCollect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(res.Removed), ","); got != "sha256:x,sha256:y,sha256:z" {
		t.Errorf("removed %s", got)
	}
	if res.Before.Used() != 950 || res.After.Used() != 700 || res.BytesFreed != 400 {
		t.Errorf("result %+v", res)
	}
}

func TestGarbageCollectRemoveErrors(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	f := newFake(1000, 700, img("sha256:x", "x:1", 100), img("sha256:y", "y:1", 100), img("sha256:z", "z:1", 100))
	f.removeErr["sha256:x"] = fmt.Errorf("remove image sha256:x: %w", cri.ErrNotFound)
	f.removeErr["sha256:y"] = errors.New("boom")
	m, rec, reg := newTestManager(t, f, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}, c)
	res, err := m.GarbageCollect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "removing image sha256:y") || errors.Is(err, cri.ErrNotFound) {
		t.Errorf("err = %v", err)
	}
	// x "gone" frees nothing, y failed, z removed: 900, still short.
	if got := strings.Join(ids(res.Removed), ","); got != "sha256:z" {
		t.Errorf("removed %s", got)
	}
	if !errors.Is(err, ErrLowThresholdNotReached) {
		t.Errorf("shortfall not reported: %v", err)
	}
	<-rec.Events
	if got := metricValue(t, reg, "nodelet_image_gc_images_removed_total"); got != 1 {
		t.Errorf("removed metric %v", got)
	}
}

func TestGarbageCollectDisabled(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	f := newFake(1000, 900, img("sha256:x", "x:1", 99))
	m, rec, _ := newTestManager(t, f, Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}, c)
	res, err := m.GarbageCollect(context.Background())
	if err != nil || res.Triggered || len(f.removed) != 0 || res.Before.Used() != 999 {
		t.Errorf("%+v %v removed %v", res, err, f.removed)
	}
	if m.DiskPressure() {
		t.Errorf("pressure below 100 %% with high threshold 100")
	}
	noEvents(t, rec)
}

func TestNewManagerRefusesInvalidPolicy(t *testing.T) {
	_, err := NewManager(Config{Runtime: newFake(1, 0), Policy: Policy{HighThresholdPercent: 80, LowThresholdPercent: 85}})
	if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), "--image-gc-low-threshold") {
		t.Errorf("err = %v", err)
	}
	if _, err := NewManager(Config{Policy: DefaultPolicy()}); err == nil {
		t.Errorf("nil runtime accepted")
	}
	reg := prometheus.NewRegistry()
	if _, err := NewManager(Config{Runtime: newFake(1, 0), Policy: DefaultPolicy(), Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewManager(Config{Runtime: newFake(1, 0), Policy: DefaultPolicy(), Registerer: reg}); err == nil {
		t.Errorf("second registration on the same registry accepted")
	}
	// No recorder, no registerer: works.
	m, err := NewManager(Config{Runtime: newFake(100, 95), Policy: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}, Statfs: func(string) (uint64, uint64, error) { return 100, 5, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GarbageCollect(context.Background()); !errors.Is(err, ErrLowThresholdNotReached) {
		t.Errorf("err = %v", err)
	}
}

func TestRunReportsFailuresAndStops(t *testing.T) {
	f := newFake(1000, 0)
	f.fsErr = fmt.Errorf("image fs info: runtime down: %w", cri.ErrUnavailable)
	rec := record.NewFakeRecorder(10)
	m, err := NewManager(Config{Runtime: f, Policy: DefaultPolicy(), Period: 10 * time.Millisecond, Statfs: f.statfs,
		Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	for i := 0; i < 2; i++ {
		select {
		case e := <-rec.Events:
			if !strings.HasPrefix(e, "Warning ImageGCFailed ") || !strings.Contains(e, "runtime down") {
				t.Errorf("event %q", e)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no ImageGCFailed event")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
}

func TestImageFsUsage(t *testing.T) {
	f := newFake(1000, 100, img("sha256:x", "x:1", 50))
	u, err := ImageFsUsage(context.Background(), f, f.statfs)
	if err != nil {
		t.Fatal(err)
	}
	if u != (FsUsage{Capacity: 1000, Available: 850, ImagesBytes: 50, Mountpoint: "/fake"}) {
		t.Errorf("%+v", u)
	}
	empty := imageFsInfoFunc(func(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
		return &runtimeapi.ImageFsInfoResponse{}, nil
	})
	if _, err := ImageFsUsage(context.Background(), empty, f.statfs); err == nil || !strings.Contains(err.Error(), "no image filesystem") {
		t.Errorf("err = %v", err)
	}
	// The real statfs on a real directory.
	real := imageFsInfoFunc(func(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
		return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: t.TempDir()}}}}, nil
	})
	u, err = ImageFsUsage(context.Background(), real, nil)
	if err != nil || u.Capacity == 0 || u.Available > u.Capacity {
		t.Errorf("real statfs: %+v %v", u, err)
	}
}

type imageFsInfoFunc func(context.Context) (*runtimeapi.ImageFsInfoResponse, error)

func (f imageFsInfoFunc) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return f(ctx)
}

func TestGarbageCollectStopsWhenMeasuredBelowLow(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	// Each image frees twice its reported size (blob + unpacked snapshot).
	f := newFake(1000, 650, img("sha256:x", "x:1", 50), img("sha256:y", "y:1", 50), img("sha256:z", "z:1", 50))
	for id := range f.images {
		f.frees[id] = 100
	}
	m, _, _ := newTestManager(t, f, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}, c)
	res, err := m.GarbageCollect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 950: the plan (sizes) says x, y, z (150 >= 151? no: all three and short);
	// measured, x and y bring it to 750.
	if got := strings.Join(ids(res.Removed), ","); got != "sha256:x,sha256:y" {
		t.Errorf("removed %s", got)
	}
	if res.After.Used() != 750 || res.Shortfall != 0 {
		t.Errorf("result %+v", res)
	}
}
