package cgroups

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Manager's I/O on directories standing in for cgroup hierarchies: the
// files it writes for each mode, where. (Removal needs a real cgroupfs,
// where rmdir takes a cgroup's files with it: the e2e tests cover it.)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestManagerV1(t *testing.T) {
	fs := t.TempDir()
	var hs []hierarchy
	for _, c := range []string{"cpu", "memory", "pids", "cpuset"} {
		dir := filepath.Join(fs, c, "node")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, hierarchy{dir: filepath.Join(fs, c), controllers: []string{c}})
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if err := os.WriteFile(filepath.Join(fs, "cpuset", "node", f), []byte("0-1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ops []string
	observe := func(op string, _ time.Time) { ops = append(ops, op) }
	m, err := newManager(Config{Driver: DriverCgroupfs, PodPidsLimit: 100, Observe: observe}, Name{"node"}, ModeV1, hs)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(fs, "cpu/node/kubepods/besteffort/cpu.shares")); got != "2" {
		t.Errorf("besteffort cpu.shares %s", got)
	}
	if got := read(t, filepath.Join(fs, "cpuset/node/kubepods/burstable/cpuset.cpus")); got != "0-1" {
		t.Errorf("burstable cpuset.cpus %s, want the parent's", got)
	}
	g := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "g1"}, Spec: v1.PodSpec{Containers: []v1.Container{
		ctr("c", res("cpu", "500m", "memory", "64Mi"), res("cpu", "500m", "memory", "64Mi"))}}}
	parent, err := m.EnsurePod(g)
	if err != nil || parent != "/node/kubepods/podg1" {
		t.Fatalf("EnsurePod = %q, %v", parent, err)
	}
	for file, want := range map[string]string{
		"cpu/node/kubepods/podg1/cpu.shares":               "512",
		"cpu/node/kubepods/podg1/cpu.cfs_quota_us":         "50000",
		"memory/node/kubepods/podg1/memory.limit_in_bytes": "67108864",
		"pids/node/kubepods/podg1/pids.max":                "100",
	} {
		if got := read(t, filepath.Join(fs, file)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	b := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "b1"}, Spec: v1.PodSpec{Containers: []v1.Container{ctr("c", res("cpu", "250m"), nil)}}}
	if parent, err := m.EnsurePod(b); err != nil || parent != "/node/kubepods/burstable/podb1" {
		t.Fatalf("EnsurePod(burstable) = %q, %v", parent, err)
	}
	if got := read(t, filepath.Join(fs, "cpu/node/kubepods/burstable/cpu.shares")); got != "256" {
		t.Errorf("burstable cpu.shares %s, want its pod's 256", got)
	}
	if _, err := os.Stat(filepath.Join(fs, "memory/node/kubepods/burstable/podb1/memory.limit_in_bytes")); err == nil {
		t.Errorf("memory limit written for a pod without one")
	}
	// Known as it is: nothing rewritten.
	if err := os.WriteFile(filepath.Join(fs, "cpu/node/kubepods/burstable/podb1/cpu.shares"), []byte("7"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(b); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(fs, "cpu/node/kubepods/burstable/podb1/cpu.shares")); got != "7" {
		t.Errorf("a known pod's cgroup rewritten")
	}
	if got := m.PodUIDs(); len(got) != 2 || !got["g1"] || !got["b1"] {
		t.Errorf("PodUIDs = %v", got)
	}
	// kubelet_cgroup_manager_duration_seconds' operations, as upstream
	// counts them: the burstable cgroup's shares are updates. (destroy
	// needs a real cgroupfs: TestPodCgroups.)
	want := []string{"update", "create", "create", "update"}
	if !slices.Equal(ops, want) {
		t.Errorf("observed operations %q, want %q", ops, want)
	}
}

func TestManagerV2(t *testing.T) {
	fs := t.TempDir()
	// A cgroup v2 kernel fills cgroup.controllers of each new cgroup; the
	// stand-in has them made up front.
	for _, d := range []string{"", "kubepods", "kubepods/burstable", "kubepods/besteffort", "kubepods/podg1"} {
		if err := os.MkdirAll(filepath.Join(fs, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fs, d, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := newManager(Config{Driver: DriverCgroupfs, PodPidsLimit: 50}, Name{}, ModeV2,
		[]hierarchy{{dir: fs, v2: true, controllers: []string{"cpuset", "cpu", "io", "memory", "pids"}}})
	if err != nil {
		t.Fatal(err)
	}
	g := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "g1"}, Spec: v1.PodSpec{Containers: []v1.Container{
		ctr("c", res("cpu", "500m", "memory", "64Mi"), res("cpu", "500m", "memory", "64Mi"))}}}
	if parent, err := m.EnsurePod(g); err != nil || parent != "/kubepods/podg1" {
		t.Fatalf("EnsurePod = %q, %v", parent, err)
	}
	for file, want := range map[string]string{
		"cgroup.subtree_control":          "+cpu +memory +pids",
		"kubepods/cgroup.subtree_control": "+cpu +memory +pids",
		"kubepods/besteffort/cpu.weight":  "1",
		"kubepods/podg1/cpu.weight":       "20",
		"kubepods/podg1/cpu.max":          "50000 100000",
		"kubepods/podg1/memory.max":       "67108864",
		"kubepods/podg1/pids.max":         "50",
	} {
		if got := read(t, filepath.Join(fs, file)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Driver: DriverSystemd}, "--cgroup-driver=systemd"},
		{Config{Driver: "other"}, `--cgroup-driver="other"`},
		{Config{Driver: DriverCgroupfs, Root: "rel"}, "must be an absolute path"},
		{Config{Driver: DriverCgroupfs, FS: t.TempDir()}, "no cgroup hierarchy mounted"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}
