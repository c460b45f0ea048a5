package stats

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCgroup writes a cgroup v1 tree for the cgroup at path.
func fakeCgroup(t *testing.T, root, path string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		ctrl, file := filepath.Dir(name), filepath.Base(name)
		p := filepath.Join(root, ctrl, path, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCgroupRead(t *testing.T) {
	root, sys := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755)
	os.Symlink("../../devices/pci0000:00/block/sda", filepath.Join(sys, "dev", "block", "8:0"))
	fakeCgroup(t, root, "/k8s.io/c1", map[string]string{
		"memory/memory.stat":               "cache 1\nrss 2\ntotal_cache 4096\ntotal_rss 8192\ntotal_swap 12\ntotal_mapped_file 3\ntotal_active_file 4\ntotal_inactive_file 5\n",
		"memory/memory.max_usage_in_bytes": "9000\n",
		"memory/memory.failcnt":            "2\n",
		"cpuacct/cpuacct.stat":             "user 150\nsystem 25\n",
		"memory/memory.limit_in_bytes":     "9223372036854771712\n",
		"cpu/cpu.shares":                   "512\n",
		"cpu/cpu.cfs_period_us":            "100000\n",
		"cpu/cpu.cfs_quota_us":             "-1\n",
		"blkio/blkio.throttle.io_service_bytes_recursive": "8:0 Read 100\n8:0 Write 200\n8:0 Sync 300\n8:0 Async 0\n8:0 Total 300\n" +
			"253:1 Read 7\n253:1 Write 0\nTotal 307\n",
		"blkio/blkio.throttle.io_serviced_recursive": "8:0 Read 3\n8:0 Write 4\n8:0 Total 7\nTotal 7\n",
		"cpu/cpu.stat": "nr_periods 10\nnr_throttled 2\nthrottled_time 5000\n",
	})
	r := newCgroupReader(root, filepath.Join(sys, "dev", "block"))
	cs, err := r.read("/k8s.io/c1")
	if err != nil {
		t.Fatal(err)
	}
	if !cs.HasMemoryCache || cs.MemoryCache != 4096 || !cs.HasMemoryLimit || cs.MemoryLimit != 9223372036854771712 {
		t.Errorf("memory %+v", cs)
	}
	if !cs.HasCPU || cs.CPUShares != 512 || cs.CPUPeriod != 100000 || cs.CPUQuota != 0 {
		t.Errorf("cpu %+v", cs)
	}
	if !cs.HasMemorySwap || cs.MemorySwap != 12 || !cs.HasCFS || cs.CFSPeriods != 10 || cs.CFSThrottledPeriods != 2 || cs.CFSThrottledNanos != 5000 {
		t.Errorf("swap/cfs %+v", cs)
	}
	if cs.Mem[MemMaxUsage] != (OptUint{9000, true}) || cs.Mem[MemFailcnt] != (OptUint{2, true}) || cs.Mem[MemKernel].OK ||
		cs.Mem[MemMappedFile] != (OptUint{3, true}) || cs.Mem[MemActiveFile] != (OptUint{4, true}) || cs.Mem[MemInactiveFile] != (OptUint{5, true}) {
		t.Errorf("memory extras %+v", cs.Mem)
	}
	if !cs.HasCPUAcctStat || cs.CPUUserNanos != 1500000000 || cs.CPUSystemNanos != 250000000 {
		t.Errorf("cpuacct.stat %+v", cs)
	}
	want := []DeviceIO{{Device: "/dev/sda", Read: 100, Write: 200, ReadOps: 3, WriteOps: 4}, {Device: "253:1", Read: 7}}
	if len(cs.IO) != 2 || cs.IO[0] != want[0] || cs.IO[1] != want[1] {
		t.Errorf("io %+v, want %+v", cs.IO, want)
	}

	// A quota, and no blkio files: I/O left out, the rest read.
	fakeCgroup(t, root, "/k8s.io/c2", map[string]string{
		"memory/memory.stat":           "total_cache 0\n",
		"memory/memory.limit_in_bytes": "67108864\n",
		"cpu/cpu.shares":               "2\n",
		"cpu/cpu.cfs_period_us":        "100000\n",
		"cpu/cpu.cfs_quota_us":         "50000\n",
	})
	cs, err = r.read("/k8s.io/c2")
	if err != nil || cs.CPUQuota != 50000 || cs.MemoryLimit != 64<<20 || cs.IO != nil || cs.HasMemorySwap || cs.HasCFS {
		t.Errorf("c2 %+v %v", cs, err)
	}

	for _, bad := range []string{"/k8s.io/gone", "system.slice:cri:abc", "k8s.io/rel", "/k8s.io/../../etc"} {
		if _, err := r.read(bad); err == nil {
			t.Errorf("read(%q) succeeded", bad)
		}
	}
}

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-3": 4, "0-3,8,10-11": 7, "0,2": 2} {
		if got, err := countCPUList(in); err != nil || got != want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "1-x"} {
		if _, err := countCPUList(bad); err == nil {
			t.Errorf("countCPUList(%q) succeeded", bad)
		}
	}
}

func TestDetailed(t *testing.T) {
	sec := int64(time.Second)
	rt := &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{sandbox("sb-web", "web", "uid-web", 2*sec, true, false)},
		containers: []*runtimeapi.Container{
			container("app-1", "sb-web", "app", 4*sec, true),
			container("side", "sb-web", "side", 4*sec, true),
		},
		stats:   []*runtimeapi.ContainerStats{cstats("app-1", 100*sec, 2e9, 1000), cstats("side", 100*sec, 1e9, 500)},
		cgroups: map[string]string{"app-1": "/k8s.io/app-1"},
	}
	rt.containers[0].Image = &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "busybox:1"}
	rt.containers[1].Image = &runtimeapi.ImageSpec{Image: "sha256:side"}
	rt.images = []*runtimeapi.Image{{Id: "sha256:side", RepoTags: []string{"docker.io/library/side:2", "side:latest"}}, {Id: "sha256:untagged"}}
	proc := fakeProc(t, 1000)
	p, _, _ := newTestProvider(t, rt, proc, func(string) (int, error) { return 42, nil })
	sys, cg, etc := t.TempDir(), t.TempDir(), t.TempDir()
	p.cfg.SysRoot, p.cfg.EtcRoot = sys, etc
	p.cgroups = newCgroupReader(cg, filepath.Join(sys, "dev", "block"))
	fakeCgroup(t, cg, "/k8s.io/app-1", map[string]string{"memory/memory.stat": "total_cache 4096\n"})
	os.MkdirAll(filepath.Join(sys, "devices", "system", "cpu"), 0o755)
	os.WriteFile(filepath.Join(sys, "devices", "system", "cpu", "online"), []byte("0-1\n"), 0o644)
	os.WriteFile(filepath.Join(etc, "machine-id"), []byte("mid\n"), 0o644)

	d, err := p.Detailed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Summary.Pods) != 1 || len(d.Containers) != 2 {
		t.Fatalf("pods %d containers %+v", len(d.Summary.Pods), d.Containers)
	}
	app := d.Containers[ContainerKey{PodUID: "uid-web", Name: "app"}]
	if app.ID != "app-1" || app.Image != "busybox:1" || app.CgroupPath != "/k8s.io/app-1" || app.Cgroup == nil || app.Cgroup.MemoryCache != 4096 {
		t.Errorf("app %+v", app)
	}
	// No cgroup path from the runtime: identity only.
	side := d.Containers[ContainerKey{PodUID: "uid-web", Name: "side"}]
	if side.ID != "side" || side.Image != "docker.io/library/side:2" || side.CgroupPath != "" || side.Cgroup != nil {
		t.Errorf("side %+v", side)
	}
	if pk := d.PodPackets["uid-web"]; len(pk) != 1 || pk[0] != (InterfacePackets{Name: "eth0", RxPackets: 10, TxPackets: 20}) {
		t.Errorf("pod packets %+v", pk)
	}
	if d.MachineErr != nil || d.Machine.Cores != 2 || d.Machine.MemoryBytes != 4000*1024 || d.Machine.MachineID != "mid" {
		t.Errorf("machine %+v %v", d.Machine, d.MachineErr)
	}
	// The cgroup path is asked once per container.
	delete(rt.cgroups, "app-1")
	if d, err = p.Detailed(context.Background()); err != nil || d.Containers[ContainerKey{PodUID: "uid-web", Name: "app"}].CgroupPath != "/k8s.io/app-1" {
		t.Errorf("second scrape: %+v %v", d, err)
	}
	// Image names are cached: images were listed once.
	if rt.imageLists != 1 {
		t.Errorf("images listed %d times", rt.imageLists)
	}
	// An untagged image keeps its ID; the images are listed once per scrape at most.
	rt.containers[1].Image = &runtimeapi.ImageSpec{Image: "sha256:untagged"}
	rt.containers[0].Image = &runtimeapi.ImageSpec{Image: "sha256:other"}
	d, _ = p.Detailed(context.Background())
	if got := d.Containers[ContainerKey{PodUID: "uid-web", Name: "side"}].Image; got != "sha256:untagged" || rt.imageLists != 2 {
		t.Errorf("untagged image %q, %d lists", got, rt.imageLists)
	}
}
