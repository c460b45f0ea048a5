package stats

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// Runtime is what the summary needs from the container runtime;
// *cri.Client is the one implementation.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	// ListPodSandboxStats lists pod-level stats. Failing means pod CPU and
	// memory are summed from the containers.
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	// SandboxPID returns the PID of a sandbox's process, whose network
	// namespace is the pod's; used for pod network stats when the sandbox
	// stats give none. Failing: no pod network stats then.
	SandboxPID(ctx context.Context, sandboxID string) (int, error)
	// ContainerCgroup returns a container's cgroups path (its OCI spec's
	// linux.cgroupsPath); only Detailed asks, once per container.
	ContainerCgroup(ctx context.Context, containerID string) (string, error)
	// ListImages lists the runtime's images; Detailed names a container's
	// image by its first tag when the runtime reports only its ID.
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// Config configures a Provider.
type Config struct {
	NodeName string
	Runtime  Runtime
	// RootDir is --root-dir: the node file system and emptyDir volumes.
	RootDir string
	// PodLogsDir is where container logs live.
	PodLogsDir string
	// ProcRoot is /proc, SysRoot /sys, CgroupRoot /sys/fs/cgroup and
	// EtcRoot /etc unless set; tests point them at fake trees.
	ProcRoot, SysRoot, CgroupRoot, EtcRoot string
	// Now is time.Now unless set.
	Now func() time.Time
}

// Provider builds summaries. It is safe for concurrent use.
type Provider struct {
	cfg     Config
	host    host
	rates   *cpuRates
	du      *diskUsage
	cgroups *cgroupReader
	// cgroupPaths caches containers' cgroups paths by container ID; a
	// path never changes for a container.
	cgroupPaths *idCache[string]
	machine     onceValue[MachineInfo]
	fsDevices   *idCache[string] // mountpoint -> device
	imageNames  *idCache[string] // image ID -> first repo tag

	mu   sync.Mutex
	pids map[string]int // sandbox ID -> PID; a sandbox's PID never changes
	// sandboxStatsFailed is when ListPodSandboxStats last failed: it is
	// not asked again for a while (containerd 1.6 fails it for every
	// sandbox without a cgroup parent and logs an error each time), and
	// the failure is logged once.
	sandboxStatsFailed time.Time
}

// sandboxStatsRetry is how long a failing ListPodSandboxStats is left alone.
const sandboxStatsRetry = 10 * time.Minute

// New returns a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("stats: no runtime")
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = filepath.Join(cfg.SysRoot, "fs", "cgroup")
	}
	if cfg.EtcRoot == "" {
		cfg.EtcRoot = "/etc"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Provider{
		cfg:         cfg,
		host:        host{proc: cfg.ProcRoot},
		rates:       newCPURates(),
		du:          newDiskUsage(cfg.Now),
		cgroups:     newCgroupReader(cfg.CgroupRoot, filepath.Join(cfg.SysRoot, "dev", "block")),
		cgroupPaths: newIDCache[string](4096),
		fsDevices:   newIDCache[string](64),
		imageNames:  newIDCache[string](1024),
		pids:        map[string]int{},
	}, nil
}

// runtimeState is one consistent read of the runtime.
type runtimeState struct {
	sandboxes    []*runtimeapi.PodSandbox
	containers   []*runtimeapi.Container
	stats        map[string]*runtimeapi.ContainerStats
	sandboxStats map[string]*runtimeapi.PodSandboxStats
	imageFs      *runtimeapi.ImageFsInfoResponse
}

func (p *Provider) readRuntime(ctx context.Context, withFs bool) (*runtimeState, error) {
	st := &runtimeState{stats: map[string]*runtimeapi.ContainerStats{}, sandboxStats: map[string]*runtimeapi.PodSandboxStats{}}
	var (
		wg                      sync.WaitGroup
		sbErr, ctrErr, statsErr error
		stats                   []*runtimeapi.ContainerStats
		sbStats                 []*runtimeapi.PodSandboxStats
	)
	wg.Go(func() { st.sandboxes, sbErr = p.cfg.Runtime.ListPodSandbox(ctx, nil) })
	wg.Go(func() { st.containers, ctrErr = p.cfg.Runtime.ListContainers(ctx, nil) })
	wg.Go(func() { stats, statsErr = p.cfg.Runtime.ListContainerStats(ctx, nil) })
	wg.Go(func() { sbStats = p.sandboxStats(ctx) })
	if withFs {
		wg.Go(func() {
			var err error
			if st.imageFs, err = p.cfg.Runtime.ImageFsInfo(ctx); err != nil {
				klog.V(2).InfoS("Stats: image file system info", "err", err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(sbErr, ctrErr, statsErr); err != nil {
		return nil, fmt.Errorf("stats from the runtime: %w", err)
	}
	for _, s := range stats {
		st.stats[s.GetAttributes().GetId()] = s
	}
	for _, s := range sbStats {
		st.sandboxStats[s.GetAttributes().GetId()] = s
	}
	return st, nil
}

func (p *Provider) sandboxStats(ctx context.Context) []*runtimeapi.PodSandboxStats {
	p.mu.Lock()
	failed := p.sandboxStatsFailed
	p.mu.Unlock()
	if !failed.IsZero() && p.cfg.Now().Sub(failed) < sandboxStatsRetry {
		return nil
	}
	s, err := p.cfg.Runtime.ListPodSandboxStats(ctx, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.sandboxStatsFailed.IsZero() {
			klog.InfoS("Runtime gives no pod sandbox stats; summing containers instead", "err", err)
		}
		p.sandboxStatsFailed = p.cfg.Now()
		return nil
	}
	p.sandboxStatsFailed = time.Time{}
	return s
}

// Summary returns the node's summary. With onlyCPUAndMemory, file systems
// and network are left out (metrics-server's request).
func (p *Provider) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error) {
	return p.summary(ctx, onlyCPUAndMemory, nil)
}

// summary builds the summary; a non-nil d collects, for every container
// the summary reports, what Detailed adds.
func (p *Provider) summary(ctx context.Context, onlyCPUAndMemory bool, d *Detail) (*statsapi.Summary, error) {
	rs, err := p.readRuntime(ctx, !onlyCPUAndMemory)
	if err != nil {
		return nil, err
	}
	now := metav1.NewTime(p.cfg.Now())
	node, err := p.nodeStats(rs, now, onlyCPUAndMemory)
	if err != nil {
		return nil, err
	}
	pods := p.podStats(ctx, rs, now, onlyCPUAndMemory, d)
	if d != nil && rs.imageFs != nil && len(rs.imageFs.ImageFilesystems) > 0 {
		d.ImageFsDevice = p.fsDevice(rs.imageFs.ImageFilesystems[0].GetFsId().GetMountpoint())
	}
	p.rates.forget(10 * time.Minute)
	p.du.forget()
	return &statsapi.Summary{Node: *node, Pods: pods}, nil
}

func (p *Provider) nodeStats(rs *runtimeState, now metav1.Time, only bool) (*statsapi.NodeStats, error) {
	n := &statsapi.NodeStats{NodeName: p.cfg.NodeName}
	usage, boot, err := p.host.cpuTotal()
	if err != nil {
		return nil, fmt.Errorf("node CPU: %w", err)
	}
	n.StartTime = metav1.NewTime(boot)
	n.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: ptr(usage)}
	if r, ok := p.rates.rate("node", now.Time, usage); ok {
		n.CPU.UsageNanoCores = ptr(r)
	}
	if n.Memory, n.Swap, err = p.host.memory(now); err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	if only {
		return n, nil
	}
	if n.Network, err = p.host.network("self", now); err != nil {
		klog.V(2).InfoS("Stats: node network", "err", err)
	}
	if p.cfg.RootDir != "" {
		if n.Fs, err = fsStats(p.cfg.RootDir, now); err != nil {
			klog.V(2).InfoS("Stats: node file system", "err", err)
		}
	}
	n.Rlimit = p.host.rlimit(now)
	if fs := p.imageFs(rs, now); fs != nil {
		// containerd keeps containers' writable layers on the image file
		// system; with no separate container file system it is the same.
		n.Runtime = &statsapi.RuntimeStats{ImageFs: fs, ContainerFs: fs}
	}
	return n, nil
}

// imageFs combines the runtime's usage of its image file system with the
// file system's own capacity.
func (p *Provider) imageFs(rs *runtimeState, now metav1.Time) *statsapi.FsStats {
	if rs.imageFs == nil || len(rs.imageFs.ImageFilesystems) == 0 {
		return nil
	}
	u := rs.imageFs.ImageFilesystems[0]
	fs := &statsapi.FsStats{Time: now}
	if mp := u.GetFsId().GetMountpoint(); mp != "" {
		if whole, err := fsStats(mp, now); err == nil {
			fs = whole
		}
	}
	fs.UsedBytes = value(u.UsedBytes)
	fs.InodesUsed = value(u.InodesUsed)
	return fs
}

// podStats reports every pod whose newest sandbox is ready, with its
// running containers.
func (p *Provider) podStats(ctx context.Context, rs *runtimeState, now metav1.Time, only bool, d *Detail) []statsapi.PodStats {
	newest := map[string]*runtimeapi.PodSandbox{}
	for _, sb := range rs.sandboxes {
		uid := sb.GetLabels()[cri.LabelPodUID]
		if uid == "" {
			continue // not ours
		}
		if cur, ok := newest[uid]; !ok || sb.CreatedAt > cur.CreatedAt {
			newest[uid] = sb
		}
	}
	// The newest running instance of each container name, per sandbox.
	bySandbox := map[string]map[string]*runtimeapi.Container{}
	for _, c := range rs.containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		name := c.GetMetadata().GetName()
		m := bySandbox[c.PodSandboxId]
		if m == nil {
			m = map[string]*runtimeapi.Container{}
			bySandbox[c.PodSandboxId] = m
		}
		if cur, ok := m[name]; !ok || c.CreatedAt > cur.CreatedAt {
			m[name] = c
		}
	}

	var out []statsapi.PodStats
	for uid, sb := range newest {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		ps := statsapi.PodStats{
			PodRef: statsapi.PodReference{
				Name:      sb.GetLabels()[cri.LabelPodName],
				Namespace: sb.GetLabels()[cri.LabelPodNamespace],
				UID:       uid,
			},
			StartTime:  metav1.NewTime(time.Unix(0, sb.CreatedAt)),
			Containers: []statsapi.ContainerStats{},
		}
		logDir := ""
		if p.cfg.PodLogsDir != "" {
			logDir = criconfig.PodLogDir(p.cfg.PodLogsDir, ps.PodRef.Namespace, ps.PodRef.Name, types.UID(uid))
		}
		for _, c := range bySandbox[sb.Id] {
			ps.Containers = append(ps.Containers, p.containerStats(c.Id, c.GetMetadata().GetName(), c.CreatedAt, rs.stats[c.Id], logDir, rs, now, only))
			if d != nil {
				d.Containers[ContainerKey{PodUID: uid, Name: c.GetMetadata().GetName()}] = p.containerDetail(ctx, c, d)
			}
		}

		sort.Slice(ps.Containers, func(i, j int) bool { return ps.Containers[i].Name < ps.Containers[j].Name })

		sbs := rs.sandboxStats[sb.Id].GetLinux()
		ps.CPU, ps.Memory = podCPUMemory(sbs, ps.Containers, now)
		if sbs.GetProcess().GetProcessCount() != nil {
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: value(sbs.GetProcess().GetProcessCount())}
		}
		if !only {
			var packets []InterfacePackets
			ps.Network, packets = p.podNetwork(ctx, sb, sbs, now)
			if d != nil && packets != nil {
				d.PodPackets[uid] = packets
			}
			ps.VolumeStats = p.emptyDirs(types.UID(uid), now)
			ps.EphemeralStorage = ephemeral(ps, now)
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].PodRef, out[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// ContainerStats returns the stats of one container, as in the summary.
func (p *Provider) ContainerStats(ctx context.Context, id string) (*statsapi.ContainerStats, error) {
	s, err := p.cfg.Runtime.ContainerStats(ctx, id)
	if err != nil {
		return nil, err
	}
	ctrs, err := p.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil {
		return nil, err
	}
	if len(ctrs) == 0 {
		return nil, fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
	}
	c := ctrs[0]
	rs := &runtimeState{}
	if info, err := p.cfg.Runtime.ImageFsInfo(ctx); err == nil {
		rs.imageFs = info
	}
	logDir := ""
	if l := c.GetLabels(); p.cfg.PodLogsDir != "" && l[cri.LabelPodUID] != "" {
		logDir = criconfig.PodLogDir(p.cfg.PodLogsDir, l[cri.LabelPodNamespace], l[cri.LabelPodName], types.UID(l[cri.LabelPodUID]))
	}
	cs := p.containerStats(id, c.GetMetadata().GetName(), c.CreatedAt, s, logDir, rs, metav1.NewTime(p.cfg.Now()), false)
	return &cs, nil
}

func (p *Provider) containerStats(id, name string, created int64, s *runtimeapi.ContainerStats, podLogDir string, rs *runtimeState, now metav1.Time, only bool) statsapi.ContainerStats {
	cs := statsapi.ContainerStats{Name: name, StartTime: metav1.NewTime(time.Unix(0, created))}
	if s == nil {
		return cs
	}
	cs.CPU = p.cpu(id, s.Cpu, now)
	cs.Memory = memory(s.Memory, now)
	if only {
		return cs
	}
	if wl := s.WritableLayer; wl != nil {
		fs := &statsapi.FsStats{Time: at(wl.Timestamp, now)}
		if img := p.imageFs(rs, now); img != nil {
			fs.CapacityBytes, fs.AvailableBytes, fs.Inodes, fs.InodesFree = img.CapacityBytes, img.AvailableBytes, img.Inodes, img.InodesFree
		}
		fs.UsedBytes, fs.InodesUsed = value(wl.UsedBytes), value(wl.InodesUsed)
		cs.Rootfs = fs
	}
	if podLogDir != "" {
		dir := filepath.Join(podLogDir, name)
		used, inodes := p.du.usage(dir)
		fs, err := fsStats(p.cfg.PodLogsDir, now)
		if err != nil {
			fs = &statsapi.FsStats{Time: now}
		}
		fs.UsedBytes, fs.InodesUsed = ptr(used), ptr(inodes)
		cs.Logs = fs
	}
	return cs
}

// cpu converts CRI CPU usage, computing the rate from our own previous
// sample when there is one.
func (p *Provider) cpu(key string, u *runtimeapi.CpuUsage, now metav1.Time) *statsapi.CPUStats {
	if u == nil {
		return nil
	}
	c := &statsapi.CPUStats{Time: at(u.Timestamp, now), UsageCoreNanoSeconds: value(u.UsageCoreNanoSeconds)}
	if c.UsageCoreNanoSeconds != nil {
		if r, ok := p.rates.rate(key, c.Time.Time, *c.UsageCoreNanoSeconds); ok {
			c.UsageNanoCores = ptr(r)
			return c
		}
	}
	c.UsageNanoCores = value(u.UsageNanoCores)
	return c
}

func memory(u *runtimeapi.MemoryUsage, now metav1.Time) *statsapi.MemoryStats {
	if u == nil {
		return nil
	}
	m := &statsapi.MemoryStats{
		Time:            at(u.Timestamp, now),
		UsageBytes:      value(u.UsageBytes),
		WorkingSetBytes: value(u.WorkingSetBytes),
		RSSBytes:        value(u.RssBytes),
		PageFaults:      value(u.PageFaults),
		MajorPageFaults: value(u.MajorPageFaults),
	}
	// The runtime reports 0 available for a container without a limit;
	// upstream leaves the field out then.
	if v := u.GetAvailableBytes().GetValue(); v > 0 {
		m.AvailableBytes = ptr(v)
	}
	return m
}

// podCPUMemory takes pod CPU and memory from the sandbox stats when the
// runtime gives them, else sums the containers.
func podCPUMemory(sbs *runtimeapi.LinuxPodSandboxStats, ctrs []statsapi.ContainerStats, now metav1.Time) (*statsapi.CPUStats, *statsapi.MemoryStats) {
	if sbs.GetCpu() != nil && sbs.GetMemory() != nil {
		c := &statsapi.CPUStats{Time: at(sbs.Cpu.Timestamp, now), UsageCoreNanoSeconds: value(sbs.Cpu.UsageCoreNanoSeconds), UsageNanoCores: value(sbs.Cpu.UsageNanoCores)}
		return c, memory(sbs.Memory, now)
	}
	cpu := &statsapi.CPUStats{Time: now}
	mem := &statsapi.MemoryStats{Time: now}
	for _, c := range ctrs {
		if c.CPU != nil {
			cpu.UsageCoreNanoSeconds = sum(cpu.UsageCoreNanoSeconds, c.CPU.UsageCoreNanoSeconds)
			cpu.UsageNanoCores = sum(cpu.UsageNanoCores, c.CPU.UsageNanoCores)
		}
		if c.Memory != nil {
			mem.UsageBytes = sum(mem.UsageBytes, c.Memory.UsageBytes)
			mem.WorkingSetBytes = sum(mem.WorkingSetBytes, c.Memory.WorkingSetBytes)
			mem.RSSBytes = sum(mem.RSSBytes, c.Memory.RSSBytes)
			mem.PageFaults = sum(mem.PageFaults, c.Memory.PageFaults)
			mem.MajorPageFaults = sum(mem.MajorPageFaults, c.Memory.MajorPageFaults)
		}
	}
	return cpu, mem
}

// podNetwork reads pod network stats from the sandbox process's network
// namespace (every interface, with packet counters), or, where that cannot
// be read, from the runtime's sandbox stats (bytes and errors only; a
// runtime that reports only the default interface still shows it among the
// interfaces). Host-network pods have none of their own.
func (p *Provider) podNetwork(ctx context.Context, sb *runtimeapi.PodSandbox, sbs *runtimeapi.LinuxPodSandboxStats, now metav1.Time) (*statsapi.NetworkStats, []InterfacePackets) {
	if sb.GetAnnotations()[cri.AnnotationSandboxHostNetwork] == "true" {
		return nil, nil
	}
	pid, err := p.sandboxPID(ctx, sb.Id)
	if err == nil {
		ns, packets, err := p.host.networkPackets(fmt.Sprint(pid), now)
		if err == nil {
			return ns, packets
		}
		klog.V(3).InfoS("Stats: pod network", "sandbox", sb.Id, "err", err)
	} else {
		klog.V(3).InfoS("Stats: sandbox process", "sandbox", sb.Id, "err", err)
	}
	n := sbs.GetNetwork()
	if n == nil {
		return nil, nil
	}
	ns := &statsapi.NetworkStats{Time: at(n.Timestamp, now)}
	for _, it := range n.Interfaces {
		ns.Interfaces = append(ns.Interfaces, iface(it))
	}
	if n.DefaultInterface != nil {
		ns.InterfaceStats = iface(n.DefaultInterface)
		if !slices.ContainsFunc(ns.Interfaces, func(i statsapi.InterfaceStats) bool { return i.Name == ns.InterfaceStats.Name }) {
			ns.Interfaces = append(ns.Interfaces, ns.InterfaceStats)
		}
	}
	return ns, nil
}

func (p *Provider) sandboxPID(ctx context.Context, id string) (int, error) {
	p.mu.Lock()
	pid, ok := p.pids[id]
	p.mu.Unlock()
	if ok {
		return pid, nil
	}
	pid, err := p.cfg.Runtime.SandboxPID(ctx, id)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if len(p.pids) > 4096 {
		p.pids = map[string]int{} // sandboxes come and go; start over now and then
	}
	p.pids[id] = pid
	p.mu.Unlock()
	return pid, nil
}

// emptyDirs reports the pod's emptyDir volumes on disk.
func (p *Provider) emptyDirs(uid types.UID, now metav1.Time) []statsapi.VolumeStats {
	if p.cfg.RootDir == "" {
		return nil
	}
	base := layout.PluginDir(p.cfg.RootDir, uid, layout.PluginEmptyDir)
	entries, err := filepath.Glob(filepath.Join(base, "*"))
	if err != nil || len(entries) == 0 {
		return nil
	}
	whole, err := fsStats(p.cfg.RootDir, now)
	if err != nil {
		whole = &statsapi.FsStats{Time: now}
	}
	var out []statsapi.VolumeStats
	for _, dir := range entries {
		used, inodes := p.du.usage(dir)
		fs := *whole
		fs.UsedBytes, fs.InodesUsed = ptr(used), ptr(inodes)
		out = append(out, statsapi.VolumeStats{Name: filepath.Base(dir), FsStats: fs})
	}
	return out
}

// ephemeral is the pod's local storage use: writable layers, logs and
// emptyDir volumes, on the node file system's capacity.
func ephemeral(ps statsapi.PodStats, now metav1.Time) *statsapi.FsStats {
	fs := &statsapi.FsStats{Time: now, UsedBytes: ptr[uint64](0), InodesUsed: ptr[uint64](0)}
	add := func(f *statsapi.FsStats) {
		if f == nil {
			return
		}
		fs.UsedBytes = sum(fs.UsedBytes, f.UsedBytes)
		fs.InodesUsed = sum(fs.InodesUsed, f.InodesUsed)
	}
	for _, c := range ps.Containers {
		add(c.Rootfs)
		add(c.Logs)
		if c.Logs != nil && fs.CapacityBytes == nil {
			fs.CapacityBytes, fs.AvailableBytes, fs.Inodes, fs.InodesFree = c.Logs.CapacityBytes, c.Logs.AvailableBytes, c.Logs.Inodes, c.Logs.InodesFree
		}
	}
	for i := range ps.VolumeStats {
		add(&ps.VolumeStats[i].FsStats)
	}
	return fs
}

func iface(u *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
	return statsapi.InterfaceStats{Name: u.Name, RxBytes: value(u.RxBytes), RxErrors: value(u.RxErrors), TxBytes: value(u.TxBytes), TxErrors: value(u.TxErrors)}
}

func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptr(v.Value)
}

func sum(a, b *uint64) *uint64 {
	switch {
	case b == nil:
		return a
	case a == nil:
		return ptr(*b)
	default:
		return ptr(*a + *b)
	}
}

// at converts a CRI timestamp (ns), using now when the runtime gave none.
func at(ns int64, now metav1.Time) metav1.Time {
	if ns == 0 {
		return now
	}
	return metav1.NewTime(time.Unix(0, ns))
}
