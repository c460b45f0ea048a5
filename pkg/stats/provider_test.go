package stats

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// fakeProc writes a minimal /proc tree: node CPU, memory, network and one
// sandbox process (pid 42) with its own network namespace.
func fakeProc(t *testing.T, cpuUser int) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"stat": "cpu  " + itoa(cpuUser) + " 0 100 5000 7 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nbtime 1796200000\n",
		"meminfo": "MemTotal:       4000 kB\nMemFree:        1000 kB\nMemAvailable:   2500 kB\n" +
			"Inactive(file):  500 kB\nAnonPages:       800 kB\nSwapTotal:         0 kB\n",
		"vmstat":             "pgfault 123\npgmajfault 4\n",
		"self/net/dev":       netDev("eth0", 1000, 2000) + "  lo: 5 0 0 0 0 0 0 0 5 0 0 0 0 0 0 0\n" + netDev("nodelet0", 10, 20),
		"self/net/route":     "Iface\tDestination\tGateway\n nodelet0\t0000580A\t00000000\neth0\t00000000\t0102A8C0\n",
		"42/net/dev":         netDev("eth0", 77, 88),
		"sys/kernel/pid_max": "4194304\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func itoa(i int) string { return strconv.Itoa(i) }

func netDev(name string, rx, tx int) string {
	// Inter-|   Receive: bytes packets errs drop fifo frame compressed multicast | Transmit: bytes packets errs ...
	return "  " + name + ": " + itoa(rx) + " 10 1 0 0 0 0 0 " + itoa(tx) + " 20 2 0 0 0 0 0\n"
}

var _ Runtime = (*fakeRuntime)(nil)

// The one CRI client is what nodelet wires in.
var _ Runtime = (*cri.Client)(nil)

type fakeRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	stats      []*runtimeapi.ContainerStats
	imageFs    *runtimeapi.ImageFsInfoResponse
	// sandboxStats and pid answer ListPodSandboxStats and SandboxPID;
	// nil fails them.
	sandboxStats func() ([]*runtimeapi.PodSandboxStats, error)
	pid          func(sandboxID string) (int, error)
	// cgroups answers ContainerCgroup; a missing ID fails it.
	cgroups map[string]string
	images  []*runtimeapi.Image
	// imageLists counts ListImages calls.
	imageLists int
}

func (f *fakeRuntime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.imageLists++
	return f.images, nil
}

func (f *fakeRuntime) ContainerCgroup(_ context.Context, id string) (string, error) {
	if p, ok := f.cgroups[id]; ok {
		return p, nil
	}
	return "", errors.New("no cgroup")
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return f.sandboxes, nil
}
func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if filter.GetId() == "" {
		return f.containers, nil
	}
	for _, c := range f.containers {
		if c.Id == filter.Id {
			return []*runtimeapi.Container{c}, nil
		}
	}
	return nil, nil
}
func (f *fakeRuntime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return f.stats, nil
}
func (f *fakeRuntime) ContainerStats(_ context.Context, id string) (*runtimeapi.ContainerStats, error) {
	for _, s := range f.stats {
		if s.Attributes.Id == id {
			return s, nil
		}
	}
	return nil, cri.ErrNotFound
}
func (f *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return f.imageFs, nil
}
func (f *fakeRuntime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if f.sandboxStats == nil {
		return nil, errors.New("no sandbox stats")
	}
	return f.sandboxStats()
}
func (f *fakeRuntime) SandboxPID(_ context.Context, id string) (int, error) {
	if f.pid == nil {
		return 0, errors.New("no sandbox pid")
	}
	return f.pid(id)
}

func u64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

func sandbox(id, name, uid string, created int64, ready, hostNet bool) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	sb := &runtimeapi.PodSandbox{
		Id: id, State: st, CreatedAt: created,
		Labels: map[string]string{cri.LabelPodName: name, cri.LabelPodNamespace: "default", cri.LabelPodUID: uid},
	}
	if hostNet {
		sb.Annotations = map[string]string{cri.AnnotationSandboxHostNetwork: "true"}
	}
	return sb
}

func container(id, sb, name string, created int64, running bool) *runtimeapi.Container {
	st := runtimeapi.ContainerState_CONTAINER_EXITED
	if running {
		st = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sb, State: st, CreatedAt: created,
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Labels:   map[string]string{cri.LabelPodName: "web", cri.LabelPodNamespace: "default", cri.LabelPodUID: "uid-web", cri.LabelContainerName: name},
	}
}

func cstats(id string, ts int64, cpu, ws uint64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes:    &runtimeapi.ContainerAttributes{Id: id},
		Cpu:           &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: u64(cpu), UsageNanoCores: u64(0)},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: u64(ws), UsageBytes: u64(ws + 10), AvailableBytes: u64(0), RssBytes: u64(5)},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: ts, UsedBytes: u64(4096), InodesUsed: u64(3)},
	}
}

func newTestProvider(t *testing.T, rt *fakeRuntime, proc string, pid func(string) (int, error)) (*Provider, string, string) {
	t.Helper()
	root, logsDir := t.TempDir(), t.TempDir()
	rt.pid = pid
	rt.sandboxStats = func() ([]*runtimeapi.PodSandboxStats, error) {
		return nil, errors.New("failed to get cgroup metrics for sandbox: cgroupPath is empty")
	}
	p, err := New(Config{NodeName: "node-a", Runtime: rt, RootDir: root, PodLogsDir: logsDir, ProcRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	return p, root, logsDir
}

func TestSummary(t *testing.T) {
	sec := int64(time.Second)
	rt := &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{
			sandbox("sb-old", "web", "uid-web", 1*sec, false, false),
			sandbox("sb-web", "web", "uid-web", 2*sec, true, false),
			sandbox("sb-host", "hostpod", "uid-host", 2*sec, true, true),
			sandbox("sb-gone", "gone", "uid-gone", 2*sec, false, false),
			{Id: "not-ours", State: runtimeapi.PodSandboxState_SANDBOX_READY},
		},
		containers: []*runtimeapi.Container{
			container("app-0", "sb-web", "app", 3*sec, false),
			container("app-1", "sb-web", "app", 4*sec, true),
			container("side", "sb-web", "side", 4*sec, true),
			container("old", "sb-old", "app", 1*sec, true),
			container("h", "sb-host", "h", 4*sec, true),
		},
		stats: []*runtimeapi.ContainerStats{
			cstats("app-1", 100*sec, 2e9, 1000),
			cstats("side", 100*sec, 1e9, 500),
			cstats("h", 100*sec, 5e8, 100),
		},
	}
	pids := 0
	p, root, logsDir := newTestProvider(t, rt, fakeProc(t, 1000), func(id string) (int, error) {
		pids++
		if id != "sb-web" {
			t.Errorf("PID asked for sandbox %s", id)
		}
		return 42, nil
	})
	// Logs: 2 files of app; an emptyDir volume with a file.
	appLogs := filepath.Join(criconfig.PodLogDir(logsDir, "default", "web", "uid-web"), "app")
	os.MkdirAll(appLogs, 0o755)
	os.WriteFile(filepath.Join(appLogs, "0.log"), make([]byte, 10000), 0o644)
	os.WriteFile(filepath.Join(appLogs, "1.log"), make([]byte, 10000), 0o644)
	vol := layout.EmptyDir(root, "uid-web", "cache")
	os.MkdirAll(vol, 0o755)
	os.WriteFile(filepath.Join(vol, "data"), make([]byte, 8192), 0o644)

	s, err := p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	if n.NodeName != "node-a" || n.StartTime.Unix() != 1796200000 {
		t.Errorf("node %s start %v", n.NodeName, n.StartTime)
	}
	// (1000+0+100+3+2+1) ticks of 10 ms.
	if got := *n.CPU.UsageCoreNanoSeconds; got != 1106*1e7 {
		t.Errorf("node CPU %d", got)
	}
	if n.CPU.UsageNanoCores != nil {
		t.Error("node CPU rate on the first sample")
	}
	// usage = 4000-1000 kB, working set = usage - inactive file 500 kB.
	if *n.Memory.UsageBytes != 3000*1024 || *n.Memory.WorkingSetBytes != 2500*1024 || *n.Memory.AvailableBytes != 1500*1024 || *n.Memory.PageFaults != 123 {
		t.Errorf("node memory %+v", n.Memory)
	}
	if n.Swap != nil {
		t.Errorf("swap reported without swap: %+v", n.Swap)
	}
	if n.Network == nil || n.Network.Name != "eth0" || *n.Network.RxBytes != 1000 || len(n.Network.Interfaces) != 2 {
		t.Errorf("node network %+v", n.Network)
	}
	if n.Fs == nil || *n.Fs.CapacityBytes == 0 || n.Rlimit == nil || *n.Rlimit.MaxPID != 4194304 {
		t.Errorf("node fs %+v rlimit %+v", n.Fs, n.Rlimit)
	}

	if len(s.Pods) != 2 {
		t.Fatalf("%d pods, want web and hostpod: %+v", len(s.Pods), s.Pods)
	}
	host, web := s.Pods[0], s.Pods[1]
	if web.PodRef != (statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}) || web.StartTime.Unix() != 2 {
		t.Errorf("web ref %+v start %v", web.PodRef, web.StartTime)
	}
	if len(web.Containers) != 2 || web.Containers[0].Name != "app" || web.Containers[1].Name != "side" {
		t.Fatalf("web containers %+v", web.Containers)
	}
	app := web.Containers[0]
	if app.StartTime.Unix() != 4 || *app.CPU.UsageCoreNanoSeconds != 2e9 || *app.Memory.WorkingSetBytes != 1000 || app.Memory.AvailableBytes != nil {
		t.Errorf("app %+v cpu %+v mem %+v", app, app.CPU, app.Memory)
	}
	if *app.Rootfs.UsedBytes != 4096 || app.Logs == nil || *app.Logs.UsedBytes < 20000 || *app.Logs.InodesUsed != 3 {
		t.Errorf("app rootfs %+v logs %+v", app.Rootfs, app.Logs)
	}
	if *web.CPU.UsageCoreNanoSeconds != 3e9 || *web.Memory.WorkingSetBytes != 1500 {
		t.Errorf("web pod CPU %+v memory %+v", web.CPU, web.Memory)
	}
	if web.Network == nil || *web.Network.RxBytes != 77 || web.Network.Name != "eth0" {
		t.Errorf("web network %+v", web.Network)
	}
	if host.PodRef.Name != "hostpod" || host.Network != nil {
		t.Errorf("host-network pod %+v network %+v", host.PodRef, host.Network)
	}
	if len(web.VolumeStats) != 1 || web.VolumeStats[0].Name != "cache" || *web.VolumeStats[0].UsedBytes < 8192 {
		t.Errorf("volumes %+v", web.VolumeStats)
	}
	wantEph := *app.Rootfs.UsedBytes + *app.Logs.UsedBytes + *web.Containers[1].Rootfs.UsedBytes + *web.VolumeStats[0].UsedBytes
	if web.EphemeralStorage == nil || *web.EphemeralStorage.UsedBytes != wantEph {
		t.Errorf("ephemeral %+v, want used %d", web.EphemeralStorage, wantEph)
	}

	// A second summary: rates from our previous sample, PID from cache.
	rt.stats[0] = cstats("app-1", 102*sec, 3e9, 1000)
	p.host.proc = fakeProc(t, 1100)
	s2, err := p.Summary(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	app2 := s2.Pods[1].Containers[0]
	if app2.CPU.UsageNanoCores == nil || *app2.CPU.UsageNanoCores != 5e8 {
		t.Errorf("app CPU rate %v, want half a core", app2.CPU.UsageNanoCores)
	}
	if s2.Node.CPU.UsageNanoCores == nil {
		t.Error("no node CPU rate on the second sample")
	}
	if s2.Pods[1].Network != nil || app2.Rootfs != nil || s2.Node.Fs != nil {
		t.Error("only_cpu_and_memory summary has file system or network figures")
	}
	if pids != 1 {
		t.Errorf("%d PID lookups, want 1", pids)
	}

	cs, err := p.ContainerStats(context.Background(), "side")
	if err != nil || cs.Name != "side" || *cs.Memory.WorkingSetBytes != 500 || cs.Rootfs == nil {
		t.Errorf("ContainerStats: %+v %v", cs, err)
	}
	if _, err := p.ContainerStats(context.Background(), "nope"); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("unknown container: %v", err)
	}
}

func TestSummaryFromSandboxStats(t *testing.T) {
	rt := &fakeRuntime{
		sandboxes:  []*runtimeapi.PodSandbox{sandbox("sb-web", "web", "uid-web", 1, true, false)},
		containers: []*runtimeapi.Container{container("app", "sb-web", "app", 2, true)},
		stats:      []*runtimeapi.ContainerStats{cstats("app", 5, 100, 10)},
		sandboxStats: func() ([]*runtimeapi.PodSandboxStats, error) {
			return []*runtimeapi.PodSandboxStats{{
				Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb-web"},
				Linux: &runtimeapi.LinuxPodSandboxStats{
					Cpu:     &runtimeapi.CpuUsage{Timestamp: 5, UsageCoreNanoSeconds: u64(999)},
					Memory:  &runtimeapi.MemoryUsage{Timestamp: 5, WorkingSetBytes: u64(888)},
					Network: &runtimeapi.NetworkUsage{Timestamp: 5, DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: u64(7)}},
					Process: &runtimeapi.ProcessUsage{Timestamp: 5, ProcessCount: u64(3)},
				},
			}}, nil
		},
	}
	p, err := New(Config{NodeName: "n", Runtime: rt, ProcRoot: fakeProc(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	pod := s.Pods[0]
	if *pod.CPU.UsageCoreNanoSeconds != 999 || *pod.Memory.WorkingSetBytes != 888 || *pod.Network.RxBytes != 7 || *pod.ProcessStats.ProcessCount != 3 {
		t.Errorf("pod %+v %+v %+v", pod.CPU, pod.Memory, pod.Network)
	}
}

func TestCPURates(t *testing.T) {
	r := newCPURates()
	t0 := time.Unix(100, 0)
	if _, ok := r.rate("c", t0, 1e9); ok {
		t.Error("rate from one sample")
	}
	if v, ok := r.rate("c", t0.Add(2*time.Second), 2e9); !ok || v != 5e8 {
		t.Errorf("rate %d %v", v, ok)
	}
	// The runtime's cached sample again: the same answer.
	if v, ok := r.rate("c", t0.Add(2*time.Second), 2e9); !ok || v != 5e8 {
		t.Errorf("repeated sample: %d %v", v, ok)
	}
	// A counter that went back (new container under the key) starts over.
	if _, ok := r.rate("c", t0.Add(3*time.Second), 1); ok {
		t.Error("rate across a counter reset")
	}
}

func TestFailingSandboxStatsAreNotAskedEveryTime(t *testing.T) {
	now := time.Unix(1000, 0)
	calls := 0
	rt := &fakeRuntime{sandboxStats: func() ([]*runtimeapi.PodSandboxStats, error) {
		calls++
		return nil, errors.New("cgroupPath is empty")
	}}
	p, err := New(Config{NodeName: "n", Runtime: rt, ProcRoot: fakeProc(t, 1), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := p.Summary(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	now = now.Add(sandboxStatsRetry)
	p.Summary(context.Background(), true)
	if calls != 2 {
		t.Errorf("%d ListPodSandboxStats calls, want 2 (once, then after the retry period)", calls)
	}
}
