package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func TestKubepodsResources(t *testing.T) {
	capacity := rl("cpu", "2", "memory", "8Gi", "pid", "32768", "ephemeral-storage", "100Gi")
	kube, system := rl("cpu", "100m", "memory", "1Gi", "pid", "768"), rl("cpu", "400m", "memory", "512Mi", "ephemeral-storage", "1Gi")
	tests := []struct {
		name    string
		enforce bool
		kube    v1.ResourceList
		want    v1.ResourceList
	}{
		{"not enforced: capacity", false, kube, rl("cpu", "2", "memory", "8Gi", "pid", "32768")},
		{"enforced: capacity less reserved, not less eviction", true, kube, rl("cpu", "1500m", "memory", "6656Mi", "pid", "32000")},
		{"floored", true, rl("memory", "20Gi"), rl("cpu", "1600m", "memory", "0", "pid", "32768")},
	}
	for _, tc := range tests {
		got := KubepodsResources(capacity, tc.kube, system, tc.enforce)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for name, w := range tc.want {
			if g := got[name]; g.Cmp(w) != 0 {
				t.Errorf("%s: %s = %s, want %s", tc.name, name, g.String(), w.String())
			}
		}
	}
}

func TestAllocatableLimitsFiles(t *testing.T) {
	l := AllocatableLimits(rl("cpu", "1500m", "memory", "1Gi", "pid", "1000"))
	join := func(fs []File) string {
		var s []string
		for _, f := range fs {
			s = append(s, f.Name+"="+f.Value)
		}
		return strings.Join(s, " ")
	}
	if got, want := join(FilesV1(l)), "cpu.shares=1536 memory.limit_in_bytes=1073741824 pids.max=1000"; got != want {
		t.Errorf("v1: %s, want %s", got, want)
	}
	if got, want := join(FilesV2(l)), "cpu.weight=59 memory.max=1073741824 pids.max=1000"; got != want {
		t.Errorf("v2: %s, want %s", got, want)
	}
	if got, want := join(FilesV1(AllocatableLimits(rl("memory", "0")))), "memory.limit_in_bytes=1"; got != want {
		t.Errorf("zero memory: %s, want %s (never unlimited)", got, want)
	}
	if got := join(FilesV1(AllocatableLimits(rl("ephemeral-storage", "1Gi")))); got != "" {
		t.Errorf("storage: %s, want nothing", got)
	}
}

func TestEnforceV1AndV2(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		fs := t.TempDir()
		var hs []hierarchy
		for _, c := range []string{"cpu", "memory", "pids"} {
			if err := os.MkdirAll(filepath.Join(fs, c, "system.slice"), 0o755); err != nil {
				t.Fatal(err)
			}
			hs = append(hs, hierarchy{dir: filepath.Join(fs, c), controllers: []string{c}})
		}
		m, err := newManager(Config{Driver: DriverCgroupfs}, Name{}, ModeV1, hs)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.EnforceKubepods(rl("cpu", "1", "memory", "2Gi", "pid", "500")); err != nil {
			t.Fatal(err)
		}
		if err := m.EnforceReserved("/system.slice", rl("cpu", "500m", "memory", "1Gi")); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{
			"cpu/kubepods/cpu.shares":                   "1024",
			"memory/kubepods/memory.limit_in_bytes":     "2147483648",
			"pids/kubepods/pids.max":                    "500",
			"cpu/system.slice/cpu.shares":               "512",
			"memory/system.slice/memory.limit_in_bytes": "1073741824",
		} {
			if got := read(t, filepath.Join(fs, file)); got != want {
				t.Errorf("%s = %s, want %s", file, got, want)
			}
		}
		if _, err := os.Stat(filepath.Join(fs, "cpu/kubepods/cpu.cfs_quota_us")); err == nil {
			t.Error("kubepods got a CFS quota; upstream sets shares only")
		}
		if err := m.EnforceReserved("/kube.slice", rl("memory", "1Gi")); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("missing cgroup: %v", err)
		}
		if err := m.EnforceReserved("/kube.slice", nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("missing cgroup, nothing reserved: %v", err)
		}
	})
	t.Run("v2", func(t *testing.T) {
		fs := t.TempDir()
		for _, d := range []string{"", "kubepods", "kubepods/burstable", "kubepods/besteffort", "system.slice"} {
			if err := os.MkdirAll(filepath.Join(fs, d), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(fs, d, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, err := newManager(Config{Driver: DriverCgroupfs}, Name{}, ModeV2,
			[]hierarchy{{dir: fs, v2: true, controllers: []string{"cpu", "memory", "pids"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.EnforceKubepods(rl("cpu", "1", "memory", "2Gi", "pid", "500")); err != nil {
			t.Fatal(err)
		}
		if err := m.EnforceReserved("system.slice", rl("memory", "1Gi", "pid", "100")); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{
			"kubepods/cpu.weight":     "39",
			"kubepods/memory.max":     "2147483648",
			"kubepods/pids.max":       "500",
			"system.slice/memory.max": "1073741824",
			"system.slice/pids.max":   "100",
		} {
			if got := read(t, filepath.Join(fs, file)); got != want {
				t.Errorf("%s = %s, want %s", file, got, want)
			}
		}
	})
}
