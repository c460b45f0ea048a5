package stats

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CgroupStats are the figures of one container that the CRI stats do not
// carry and cAdvisor reads from the container's cgroup (v1): page cache,
// block I/O and the resource spec the runtime applied. A field the kernel
// did not give is left at its zero value with its Has flag false.
type CgroupStats struct {
	// MemoryCache is memory.stat total_cache.
	MemoryCache    uint64
	HasMemoryCache bool
	// MemorySwap is memory.stat total_swap (present with swap
	// accounting).
	MemorySwap    uint64
	HasMemorySwap bool
	// MemoryLimit is memory.limit_in_bytes; cAdvisor reports "no limit"
	// (the kernel's page-rounded max) as 0, and so does the collector.
	MemoryLimit    uint64
	HasMemoryLimit bool
	// CPUShares, CPUQuota (µs, 0: no quota) and CPUPeriod (µs) from
	// cpu.shares, cpu.cfs_quota_us and cpu.cfs_period_us.
	CPUShares, CPUQuota, CPUPeriod uint64
	HasCPU                         bool
	// Mem holds the other memory figures cAdvisor reports, each only
	// when its file or memory.stat key was there.
	Mem [NumMemExtras]OptUint
	// CPUUserNanos and CPUSystemNanos are cpuacct.stat's user and system
	// times.
	CPUUserNanos, CPUSystemNanos uint64
	HasCPUAcctStat               bool
	// CFSPeriods, CFSThrottledPeriods and CFSThrottledNanos are cpu.stat's
	// nr_periods, nr_throttled and throttled_time.
	CFSPeriods, CFSThrottledPeriods, CFSThrottledNanos uint64
	HasCFS                                             bool
	// IO is bytes and operations read and written by block device, from
	// blkio.throttle.io_service_bytes_recursive and io_serviced_recursive.
	IO []DeviceIO
}

// OptUint is a value that may be missing.
type OptUint struct {
	V  uint64
	OK bool
}

// Memory figures of CgroupStats.Mem, with their cgroup v1 sources.
const (
	MemMaxUsage     = iota // memory.max_usage_in_bytes
	MemFailcnt             // memory.failcnt
	MemKernel              // memory.kmem.usage_in_bytes
	MemMappedFile          // memory.stat total_mapped_file
	MemActiveFile          // memory.stat total_active_file
	MemInactiveFile        // memory.stat total_inactive_file
	NumMemExtras
)

// DeviceIO is the bytes read from and written to one block device.
type DeviceIO struct {
	// Device is the device's node, /dev/<name>, as cAdvisor labels it;
	// "major:minor" when it cannot be named.
	Device            string
	Read, Write       uint64 // bytes
	ReadOps, WriteOps uint64
}

// cgroupReader reads cgroup v1 controller files under a root
// (/sys/fs/cgroup; a fake tree in tests).
type cgroupReader struct {
	root string
	// sysDev is /sys/dev/block, where "major:minor" links name devices.
	sysDev string

	mu    sync.Mutex
	names map[string]string // "major:minor" -> "/dev/sda"
}

func newCgroupReader(root, sysDev string) *cgroupReader {
	return &cgroupReader{root: root, sysDev: sysDev, names: map[string]string{}}
}

// errCgroupPath is a cgroups path nodelet cannot map to cgroupfs
// directories (the systemd driver's "slice:prefix:name" form).
var errCgroupPath = errors.New("not a cgroupfs path")

// read returns the cgroup figures of the cgroup at path (the OCI spec's
// linux.cgroupsPath, e.g. /k8s.io/<id>). Files that cannot be read leave
// their fields unset; only a path that is not a cgroupfs path, or a
// container whose memory cgroup is gone, is an error.
func (r *cgroupReader) read(path string) (*CgroupStats, error) {
	if !strings.HasPrefix(path, "/") || strings.Contains(path, ":") || strings.Contains(path, "..") {
		return nil, fmt.Errorf("cgroup %q: %w", path, errCgroupPath)
	}
	cs := &CgroupStats{}
	mem := filepath.Join(r.root, "memory", path)
	stat, err := os.ReadFile(filepath.Join(mem, "memory.stat"))
	if err != nil {
		return nil, fmt.Errorf("memory cgroup of %s: %w", path, err)
	}
	if v, ok := statValue(stat, "total_cache"); ok {
		cs.MemoryCache, cs.HasMemoryCache = v, true
	}
	if v, ok := statValue(stat, "total_swap"); ok {
		cs.MemorySwap, cs.HasMemorySwap = v, true
	}
	for i, key := range [...]string{MemMappedFile: "total_mapped_file", MemActiveFile: "total_active_file", MemInactiveFile: "total_inactive_file"} {
		if key != "" {
			v, ok := statValue(stat, key)
			cs.Mem[i] = OptUint{v, ok}
		}
	}
	for i, file := range [...]string{MemMaxUsage: "memory.max_usage_in_bytes", MemFailcnt: "memory.failcnt", MemKernel: "memory.kmem.usage_in_bytes"} {
		if v, err := readUint(filepath.Join(mem, file)); err == nil {
			cs.Mem[i] = OptUint{v, true}
		}
	}
	if st, err := os.ReadFile(filepath.Join(r.root, "cpuacct", path, "cpuacct.stat")); err == nil {
		// In USER_HZ (100) ticks.
		u, ok1 := statValue(st, "user")
		sys, ok2 := statValue(st, "system")
		if ok1 && ok2 {
			cs.CPUUserNanos, cs.CPUSystemNanos, cs.HasCPUAcctStat = u*uint64(time.Second/userHZ), sys*uint64(time.Second/userHZ), true
		}
	}
	if v, err := readUint(filepath.Join(mem, "memory.limit_in_bytes")); err == nil {
		cs.MemoryLimit, cs.HasMemoryLimit = v, true
	}
	cpu := filepath.Join(r.root, "cpu", path)
	shares, errS := readUint(filepath.Join(cpu, "cpu.shares"))
	period, errP := readUint(filepath.Join(cpu, "cpu.cfs_period_us"))
	quota, errQ := readInt(filepath.Join(cpu, "cpu.cfs_quota_us"))
	if errS == nil && errP == nil && errQ == nil {
		cs.HasCPU = true
		cs.CPUShares, cs.CPUPeriod = shares, period
		if quota > 0 { // -1: no quota, which cAdvisor does not report
			cs.CPUQuota = uint64(quota)
		}
	}
	if st, err := os.ReadFile(filepath.Join(cpu, "cpu.stat")); err == nil {
		p, ok1 := statValue(st, "nr_periods")
		t, ok2 := statValue(st, "nr_throttled")
		ns, ok3 := statValue(st, "throttled_time")
		if ok1 && ok2 && ok3 {
			cs.CFSPeriods, cs.CFSThrottledPeriods, cs.CFSThrottledNanos, cs.HasCFS = p, t, ns, true
		}
	}
	blk := filepath.Join(r.root, "blkio", path)
	readBlkio := func(name string) ([]byte, error) {
		data, err := os.ReadFile(filepath.Join(blk, name+"_recursive"))
		if err != nil {
			data, err = os.ReadFile(filepath.Join(blk, name))
		}
		return data, err
	}
	if data, err := readBlkio("blkio.throttle.io_service_bytes"); err == nil {
		cs.IO = r.parseIO(data, nil)
		if ops, err := readBlkio("blkio.throttle.io_serviced"); err == nil {
			cs.IO = r.parseIO(ops, cs.IO)
		}
	}
	return cs, nil
}

// statValue finds "key value" in a memory.stat file.
func statValue(data []byte, key string) (uint64, bool) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		k, v, ok := bytes.Cut(line, []byte{' '})
		if !ok || string(k) != key {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// parseIO reads blkio's "major:minor Read|Write|... value" lines into one
// entry per device, in the file's order: bytes when bytes is nil, else
// operations into bytes' entries (adding devices bytes did not have).
func (r *cgroupReader) parseIO(data []byte, bytes []DeviceIO) []DeviceIO {
	ops := bytes != nil
	out := bytes
	idx := map[string]int{}
	for i, d := range out {
		idx[d.Device] = i
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || (f[1] != "Read" && f[1] != "Write") {
			continue
		}
		v, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			continue
		}
		dev := r.deviceName(f[0])
		i, ok := idx[dev]
		if !ok {
			i = len(out)
			idx[dev] = i
			out = append(out, DeviceIO{Device: dev})
		}
		switch {
		case f[1] == "Read" && ops:
			out[i].ReadOps = v
		case f[1] == "Read":
			out[i].Read = v
		case ops:
			out[i].WriteOps = v
		default:
			out[i].Write = v
		}
	}
	return out
}

// deviceName names a block device by its "major:minor" through the
// /sys/dev/block link (…/block/sda), cached: device numbers do not change
// names while the machine runs.
func (r *cgroupReader) deviceName(majMin string) string {
	r.mu.Lock()
	name, ok := r.names[majMin]
	r.mu.Unlock()
	if ok {
		return name
	}
	name = majMin
	if target, err := os.Readlink(filepath.Join(r.sysDev, majMin)); err == nil {
		name = "/dev/" + filepath.Base(target)
	}
	r.mu.Lock()
	if len(r.names) < 1024 {
		r.names[majMin] = name
	}
	r.mu.Unlock()
	return name
}

func readUint(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// mountDevice returns the source device of the file system holding path
// ("/dev/sda1"), looked up in <proc>/self/mountinfo by device number; ""
// when it cannot be found.
func mountDevice(proc, path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	want := fmt.Sprintf("%d:%d", unixMajor(st.Dev), unixMinor(st.Dev))
	data, err := os.ReadFile(filepath.Join(proc, "self", "mountinfo"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != want {
			continue
		}
		for i, x := range f {
			if x == "-" && i+2 < len(f) {
				return f[i+2]
			}
		}
	}
	return ""
}

func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// MachineInfo is the machine's capacity as cAdvisor reports it, with the
// identifiers it labels machine series with.
type MachineInfo struct {
	Cores                         int
	MemoryBytes, SwapBytes        uint64
	MachineID, SystemUUID, BootID string
}

// machineInfo reads the machine's logical CPUs, installed memory and
// identity. Missing identity files leave their label empty, as cAdvisor.
func (h host) machineInfo(sys, etc string) (MachineInfo, error) {
	m := MachineInfo{}
	online, err := os.ReadFile(filepath.Join(sys, "devices", "system", "cpu", "online"))
	if err != nil {
		return m, fmt.Errorf("online CPUs: %w", err)
	}
	if m.Cores, err = countCPUList(strings.TrimSpace(string(online))); err != nil {
		return m, err
	}
	kv, err := readKeyValues(filepath.Join(h.proc, "meminfo"), 1024)
	if err != nil {
		return m, fmt.Errorf("meminfo: %w", err)
	}
	if m.MemoryBytes = kv["MemTotal"]; m.MemoryBytes == 0 {
		return m, fmt.Errorf("%s/meminfo: no MemTotal", h.proc)
	}
	m.SwapBytes = kv["SwapTotal"]
	first := func(paths ...string) string {
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				return strings.TrimSpace(string(data))
			}
		}
		return ""
	}
	m.MachineID = first(filepath.Join(etc, "machine-id"), filepath.Join("/var/lib/dbus", "machine-id"))
	m.SystemUUID = first(filepath.Join(sys, "class", "dmi", "id", "product_uuid"))
	m.BootID = first(filepath.Join(h.proc, "sys", "kernel", "random", "boot_id"))
	return m, nil
}

// countCPUList counts the CPUs of a kernel CPU list such as "0-3,8,10-11".
func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		n += b - a + 1
	}
	if n == 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("cpu list %q: no CPUs", s)
	}
	return n, nil
}
