package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime has running containers whose logs are files; ReopenContainerLog
// creates a new empty file at the log path, as containerd does.
type fakeRuntime struct {
	logs      map[string]string // container ID -> log path
	reopenErr error
	reopened  []string
	statuses  map[string]int // ContainerStatus calls by container ID
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if filter != nil {
		return nil, errors.New("rotation lists every container (the runtime client caches the full list)")
	}
	out := []*runtimeapi.Container{{Id: "exited", State: runtimeapi.ContainerState_CONTAINER_EXITED}}
	for id := range f.logs {
		out = append(out, &runtimeapi.Container{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatus, error) {
	if f.statuses == nil {
		f.statuses = map[string]int{}
	}
	f.statuses[id]++
	return &runtimeapi.ContainerStatus{Id: id, LogPath: f.logs[id], State: runtimeapi.ContainerState_CONTAINER_RUNNING}, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, id string) error {
	if f.reopenErr != nil {
		return f.reopenErr
	}
	f.reopened = append(f.reopened, id)
	return os.WriteFile(f.logs[id], nil, 0o644)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	big, small := filepath.Join(dir, "big", "0.log"), filepath.Join(dir, "small", "0.log")
	os.MkdirAll(filepath.Dir(big), 0o755)
	os.MkdirAll(filepath.Dir(small), 0o755)
	rt := &fakeRuntime{logs: map[string]string{"big": big, "small": small}}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var results []string
	r, err := NewRotator(RotatorConfig{
		Runtime: rt, MaxSize: 100, MaxFiles: 3,
		Now:     func() time.Time { now = now.Add(time.Second); return now },
		Observe: func(res string) { results = append(results, res) },
	})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(small, []byte(strings.Repeat("s", 99)), 0o644)
	for i := 0; i < 4; i++ {
		os.WriteFile(big, []byte(strings.Repeat("b", 100+i)), 0o644)
		if err := r.RotateAll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// The current file plus MaxFiles-1 = 2 rotated ones, the newest kept.
	want := []string{"0.log", "0.log.20261202-100003.000000", "0.log.20261202-100004.000000"}
	if got := names(t, filepath.Dir(big)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(big), want[2])); len(b) != 103 {
		t.Errorf("newest rotated file has %d bytes, want the last content (103)", len(b))
	}
	if got := names(t, filepath.Dir(small)); len(got) != 1 {
		t.Errorf("small log rotated: %v", got)
	}
	if strings.Join(rt.reopened, " ") != "big big big big" || len(results) != 4 || results[0] != RotationDone {
		t.Errorf("reopened %v, results %v", rt.reopened, results)
	}
}

func TestRotationReopenFailsPutsFileBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	os.WriteFile(path, []byte(strings.Repeat("x", 200)), 0o644)
	rt := &fakeRuntime{logs: map[string]string{"c": path}, reopenErr: errors.New("container is stopping")}
	r, err := NewRotator(RotatorConfig{Runtime: rt, MaxSize: 100, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RotateAll(context.Background()); err == nil || !strings.Contains(err.Error(), "container is stopping") {
		t.Errorf("RotateAll: %v", err)
	}
	if got := names(t, dir); len(got) != 1 || got[0] != "0.log" {
		t.Errorf("files %v: the log must be back in place", got)
	}
	if b, _ := os.ReadFile(path); len(b) != 200 {
		t.Errorf("log content lost: %d bytes", len(b))
	}
}

func TestRotationLowersToMaxFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	os.WriteFile(path, []byte("x"), 0o644)
	for _, s := range []string{"20261201-000000.000000", "20261201-000001.000000", "20261201-000002.000000"} {
		os.WriteFile(path+"."+s, []byte("old"), 0o644)
	}
	r, _ := NewRotator(RotatorConfig{Runtime: &fakeRuntime{logs: map[string]string{"c": path}}, MaxSize: 100, MaxFiles: 2})
	if err := r.RotateAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); strings.Join(got, " ") != "0.log 0.log.20261201-000002.000000" {
		t.Errorf("files %v", got)
	}
}

func TestNewRotatorChecks(t *testing.T) {
	rt := &fakeRuntime{}
	for _, cfg := range []RotatorConfig{
		{Runtime: nil, MaxSize: 1, MaxFiles: 2},
		{Runtime: rt, MaxSize: 0, MaxFiles: 2},
		{Runtime: rt, MaxSize: 1, MaxFiles: 1},
	} {
		if _, err := NewRotator(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// An idle node's rotation pass costs one list and a stat per container: the
// runtime is asked for a container's log path once, not every interval, and
// a container that comes back after leaving the list is asked again.
func TestRotationAsksLogPathOnce(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	os.WriteFile(a, []byte("x"), 0o644)
	os.WriteFile(b, []byte("x"), 0o644)
	rt := &fakeRuntime{logs: map[string]string{"a": a, "b": b}}
	r, _ := NewRotator(RotatorConfig{Runtime: rt, MaxSize: 100, MaxFiles: 2})
	for i := 0; i < 5; i++ {
		if err := r.RotateAll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if rt.statuses["a"] != 1 || rt.statuses["b"] != 1 || rt.statuses["exited"] != 0 {
		t.Errorf("status calls %v, want one per container", rt.statuses)
	}
	delete(rt.logs, "b")
	r.RotateAll(context.Background())
	rt.logs["b"] = b
	r.RotateAll(context.Background())
	if rt.statuses["b"] != 2 {
		t.Errorf("status calls for b %d, want 2 (forgotten when it left the list)", rt.statuses["b"])
	}
}
