package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// userHZ is the unit of /proc/stat CPU times. It is 100 on every Linux
// architecture Kubernetes supports.
const userHZ = 100

// host reads node figures from a proc file system.
type host struct {
	proc string // "/proc", or a fake tree in tests
}

// cpuTotal returns the CPU time the node spent not idle, in nanoseconds,
// and the boot time.
func (h host) cpuTotal() (usage uint64, boot time.Time, err error) {
	proc, err := procfs.NewFS(h.proc)
	if err != nil {
		return 0, time.Time{}, err
	}
	st, err := proc.Stat()
	if err != nil {
		return 0, time.Time{}, err
	}
	c := st.CPUTotal
	if c == (procfs.CPUStat{}) {
		return 0, time.Time{}, fmt.Errorf("%s/stat: no cpu line", h.proc)
	}
	// user nice system idle iowait irq softirq steal (guest time is already
	// part of user and nice). procfs gives seconds; summing whole ticks
	// keeps the total exact.
	var ticks uint64
	for _, sec := range []float64{c.User, c.Nice, c.System, c.IRQ, c.SoftIRQ, c.Steal} {
		ticks += uint64(math.Round(sec * userHZ))
	}
	if st.BootTime > 0 {
		boot = time.Unix(int64(st.BootTime), 0)
	}
	return ticks * (uint64(time.Second) / userHZ), boot, nil
}

// memory returns node memory stats the way upstream computes them for the
// root cgroup: usage includes the page cache, the working set is usage less
// inactive file pages (what the kernel could drop), and available is what
// is left of the total beside the working set.
func (h host) memory(now metav1.Time) (*statsapi.MemoryStats, *statsapi.SwapStats, error) {
	proc, err := procfs.NewFS(h.proc)
	if err != nil {
		return nil, nil, err
	}
	info, err := proc.Meminfo()
	if err != nil {
		return nil, nil, fmt.Errorf("%s/meminfo: %w", h.proc, err)
	}
	total, free := deref(info.MemTotalBytes), deref(info.MemFreeBytes)
	if total == 0 {
		return nil, nil, fmt.Errorf("%s/meminfo: no MemTotal", h.proc)
	}
	usage := total - min(free, total)
	ws := usage - min(deref(info.InactiveFileBytes), usage)
	m := &statsapi.MemoryStats{
		Time:            now,
		UsageBytes:      ptr(usage),
		WorkingSetBytes: ptr(ws),
		AvailableBytes:  ptr(total - ws),
		RSSBytes:        ptr(deref(info.AnonPagesBytes)),
	}
	if vm, err := readKeyValues(filepath.Join(h.proc, "vmstat"), 1); err == nil {
		m.PageFaults = ptr(vm["pgfault"])
		m.MajorPageFaults = ptr(vm["pgmajfault"])
	}
	var swap *statsapi.SwapStats
	if st := deref(info.SwapTotalBytes); st > 0 {
		sf := min(deref(info.SwapFreeBytes), st)
		swap = &statsapi.SwapStats{Time: now, SwapAvailableBytes: ptr(sf), SwapUsageBytes: ptr(st - sf)}
	}
	return m, swap, nil
}

// readKeyValues reads "key: value [kB]" or "key value" lines, multiplying
// values by unit.
func readKeyValues(path string, unit uint64) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		out[strings.TrimSuffix(fields[0], ":")] = v * unit
	}
	return out, sc.Err()
}

// InterfacePackets are one interface's packet counters, which the stats
// API has no field for.
type InterfacePackets struct {
	Name                                       string
	RxPackets, RxDropped, TxPackets, TxDropped uint64
}

// network reads <proc>/<pidDir>/net/dev ("self" for the node) into network
// stats, loopback left out. The default interface is the one carrying the
// default route, or eth0, or the first one.
func (h host) network(pidDir string, now metav1.Time) (*statsapi.NetworkStats, error) {
	ns, _, err := h.networkPackets(pidDir, now)
	return ns, err
}

// networkPackets is network with each interface's packet counters.
func (h host) networkPackets(pidDir string, now metav1.Time) (*statsapi.NetworkStats, []InterfacePackets, error) {
	data, err := os.ReadFile(filepath.Join(h.proc, pidDir, "net", "dev"))
	if err != nil {
		return nil, nil, err
	}
	var packets []InterfacePackets
	ns := &statsapi.NetworkStats{Time: now}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if name == "lo" || len(f) < 11 {
			continue
		}
		n := func(i int) uint64 {
			v, _ := strconv.ParseUint(f[i], 10, 64)
			return v
		}
		num := func(i int) *uint64 { return ptr(n(i)) }
		// Receive: bytes packets errs drop ...; transmit starts at field 8.
		ns.Interfaces = append(ns.Interfaces, statsapi.InterfaceStats{
			Name: name, RxBytes: num(0), RxErrors: num(2), TxBytes: num(8), TxErrors: num(10),
		})
		packets = append(packets, InterfacePackets{Name: name, RxPackets: n(1), RxDropped: n(3), TxPackets: n(9), TxDropped: n(11)})
	}
	if len(ns.Interfaces) == 0 {
		return ns, packets, nil
	}
	def := h.defaultRouteInterface(pidDir)
	pick := -1
	for i, it := range ns.Interfaces {
		if it.Name == def {
			pick = i
			break
		}
		if pick < 0 && it.Name == "eth0" {
			pick = i
		}
	}
	if pick < 0 {
		pick = 0
	}
	ns.InterfaceStats = ns.Interfaces[pick]
	return ns, packets, nil
}

// defaultRouteInterface returns the interface of the IPv4 default route in
// <proc>/<pidDir>/net/route, or "".
func (h host) defaultRouteInterface(pidDir string) string {
	data, err := os.ReadFile(filepath.Join(h.proc, pidDir, "net", "route"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 2 && f[1] == "00000000" && f[2] != "00000000" {
			return f[0]
		}
	}
	return ""
}

// rlimit returns the pid limit and the number of processes (threads, as
// the kernel counts them for pid_max).
func (h host) rlimit(now metav1.Time) *statsapi.RlimitStats {
	r := &statsapi.RlimitStats{Time: now}
	if data, err := os.ReadFile(filepath.Join(h.proc, "sys", "kernel", "pid_max")); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
			r.MaxPID = &v
		}
	}
	if h.proc == "/proc" {
		var si syscall.Sysinfo_t
		if syscall.Sysinfo(&si) == nil {
			n := int64(si.Procs)
			r.NumOfRunningProcesses = &n
		}
	}
	return r
}

// fsStats reports the file system holding path.
func fsStats(path string, now metav1.Time) (*statsapi.FsStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	return &statsapi.FsStats{
		Time:           now,
		CapacityBytes:  ptr(st.Blocks * bs),
		AvailableBytes: ptr(st.Bavail * bs),
		UsedBytes:      ptr((st.Blocks - st.Bfree) * bs),
		Inodes:         ptr(st.Files),
		InodesFree:     ptr(st.Ffree),
		InodesUsed:     ptr(st.Files - st.Ffree),
	}, nil
}

func ptr[T any](v T) *T { return &v }

// deref is what procfs left nil (not reported by the kernel) as zero.
func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
