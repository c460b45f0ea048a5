package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// This file reads the machine: /proc, /sys, /etc and statfs. The parsers
// are pure and tested on sample text; the readers are thin.

// parseCPUList counts the CPUs in a kernel CPU list ("0-3,6,8-9").
func parseCPUList(s string) (int64, error) {
	var n int64
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if b < a {
			return 0, fmt.Errorf("cpu list %q: bad range %s", s, part)
		}
		n += b - a + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("cpu list %q: no CPUs", s)
	}
	return n, nil
}

// parseLoadavgTasks returns the number of scheduling entities (threads),
// the denominator of the fourth field of /proc/loadavg ("1/523").
func parseLoadavgTasks(data []byte) (int64, error) {
	fields := strings.Fields(string(data))
	if len(fields) < 4 {
		return 0, fmt.Errorf("loadavg %q: too few fields", data)
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0, fmt.Errorf("loadavg %q: no task count", data)
	}
	return strconv.ParseInt(total, 10, 64)
}

// parseOSRelease returns PRETTY_NAME from os-release, or NAME, or "Linux".
func parseOSRelease(data []byte) string {
	vals := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(s.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		} else {
			v = strings.Trim(v, `"'`)
		}
		vals[k] = v
	}
	for _, k := range []string{"PRETTY_NAME", "NAME"} {
		if vals[k] != "" {
			return vals[k]
		}
	}
	return "Linux"
}

// parseHugePageDir turns "hugepages-2048kB" into the page size in bytes.
func parseHugePageDir(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, "hugepages-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "kB")
	if !ok {
		return 0, false
	}
	kb, err := strconv.ParseInt(s, 10, 64)
	if err != nil || kb <= 0 {
		return 0, false
	}
	return kb * 1024, true
}

// hostPaths locates the files read, under root ("" is /) for tests.
type hostPaths struct{ root string }

func (p hostPaths) path(abs string) string { return filepath.Join(p.root, abs) }

func (p hostPaths) readString(abs string) (string, error) {
	b, err := os.ReadFile(p.path(abs))
	return strings.TrimSpace(string(b)), err
}

// firstOf reads the first of paths that exists and is not empty.
func (p hostPaths) firstOf(paths ...string) (string, error) {
	for _, abs := range paths {
		if s, err := p.readString(abs); err == nil && s != "" {
			return s, nil
		}
	}
	return "", fmt.Errorf("none of %s is readable", strings.Join(paths, ", "))
}

// osImage reads the OS's pretty name.
func (p hostPaths) osImage() (string, error) {
	for _, abs := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if b, err := os.ReadFile(p.path(abs)); err == nil {
			return parseOSRelease(b), nil
		}
	}
	return "", errors.New("no os-release")
}

func (p hostPaths) cpus() (int64, error) {
	s, err := p.readString("/sys/devices/system/cpu/online")
	if err != nil {
		return 0, fmt.Errorf("online CPUs: %w", err)
	}
	return parseCPUList(s)
}

// meminfo returns MemTotal and MemAvailable in bytes; MemAvailable is -1
// when the kernel does not report it.
func (p hostPaths) meminfo() (total, available int64, err error) {
	proc, err := procfs.NewFS(p.path("/proc"))
	if err != nil {
		return 0, 0, err
	}
	m, err := proc.Meminfo()
	if err != nil {
		return 0, 0, fmt.Errorf("meminfo: %w", err)
	}
	if m.MemTotalBytes == nil {
		return 0, 0, errors.New("meminfo: no MemTotal")
	}
	available = -1
	if m.MemAvailableBytes != nil {
		available = int64(*m.MemAvailableBytes)
	}
	return int64(*m.MemTotalBytes), available, nil
}

// pids returns the tasks in use and the lower of the kernel's two limits.
func (p hostPaths) pids() (inUse, limit int64, err error) {
	b, err := os.ReadFile(p.path("/proc/loadavg"))
	if err != nil {
		return 0, 0, err
	}
	if inUse, err = parseLoadavgTasks(b); err != nil {
		return 0, 0, err
	}
	for _, abs := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		s, err := p.readString(abs)
		if err != nil {
			return 0, 0, err
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", abs, err)
		}
		if limit == 0 || v < limit {
			limit = v
		}
	}
	return inUse, limit, nil
}

// hugePages maps each supported page size to the bytes of pages reserved.
func (p hostPaths) hugePages() (map[int64]int64, error) {
	dir := p.path("/sys/kernel/mm/hugepages")
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	out := map[int64]int64{}
	for _, e := range entries {
		size, ok := parseHugePageDir(e.Name())
		if !ok {
			continue
		}
		s, err := os.ReadFile(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(s)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s nr_hugepages: %w", e.Name(), err)
		}
		out[size] = n * size
	}
	return out, nil
}

// kernelVersion is uname -r.
func kernelVersion() (string, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String(), nil
}

// fsCapacity is the size of the filesystem holding path.
func fsCapacity(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}
