//go:build e2e

package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// CgroupFS is where the cgroup filesystems are mounted.
const CgroupFS = "/sys/fs/cgroup"

// cgroupRootPrefix names the cgroup roots the tests give nodelet
// (--cgroup-root): /nodelet-e2e-<pid>-<n>, so that its kubepods tree
// collides with nothing on the host (an agent's /kubepods) nor with another
// test's, and a run killed before its cleanups is swept by the next.
const cgroupRootPrefix = "nodelet-e2e-"

var cgroupRootSeq atomic.Int64

// CgroupHierarchies are the directories of the mounted cgroup hierarchies:
// on a v1 (or hybrid) host one per v1 mount plus the unified one, on a v2
// host CgroupFS itself.
func CgroupHierarchies() ([]string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(CgroupFS, &st); err != nil {
		return nil, err
	}
	if st.Type == cgroup2Magic {
		return []string{CgroupFS}, nil
	}
	entries, err := os.ReadDir(CgroupFS)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		dir := filepath.Join(CgroupFS, e.Name())
		if syscall.Statfs(dir, &st) == nil && (st.Type == cgroup1Magic || st.Type == cgroup2Magic) {
			out = append(out, dir)
		}
	}
	return out, nil
}

const (
	cgroup1Magic = 0x27e0eb
	cgroup2Magic = 0x63677270
)

// CgroupV2 reports whether the host runs the unified hierarchy alone.
func CgroupV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(CgroupFS, &st) == nil && st.Type == cgroup2Magic
}

// NewCgroupRoot makes a cgroup root private to this test in every
// hierarchy and removes it, with whatever was made under it, when the test
// ends: processes still in it (pods nodelet left running when it stopped)
// are killed first. Register it before the agent's own cleanup, so that it
// runs after the agent stopped.
func NewCgroupRoot(t testing.TB) string {
	t.Helper()
	sweepStaleCgroupRoots()
	name := fmt.Sprintf("/%s%d-%d", cgroupRootPrefix, os.Getpid(), cgroupRootSeq.Add(1))
	hs, err := CgroupHierarchies()
	if err != nil {
		t.Fatalf("cgroup hierarchies: %v", err)
	}
	t.Cleanup(func() {
		if err := RemoveCgroupTree(name, 30*time.Second); err != nil {
			t.Errorf("remove the test's cgroup root: %v", err)
		}
	})
	for _, h := range hs {
		if err := os.Mkdir(filepath.Join(h, name), 0o755); err != nil {
			t.Fatalf("cgroup root: %v", err)
		}
		if strings.HasSuffix(h, "/cpuset") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, _ := os.ReadFile(filepath.Join(h, f))
				_ = os.WriteFile(filepath.Join(h, name, f), b, 0o644)
			}
		}
	}
	return name
}

// RemoveCgroupTree kills every process in cgroup name (a path from the
// hierarchies' roots) and under it, in every hierarchy, and removes the
// cgroups deepest first, until they are gone or timeout passes.
func RemoveCgroupTree(name string, timeout time.Duration) error {
	hs, err := CgroupHierarchies()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		var errs []error
		for _, h := range hs {
			dir := filepath.Join(h, name)
			killCgroupTasks(dir)
			errs = append(errs, rmdirTree(dir))
		}
		err := errors.Join(errs...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func killCgroupTasks(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

func rmdirTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, rmdirTree(filepath.Join(dir, e.Name())))
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		errs = append(errs, fmt.Errorf("rmdir %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// sweepStaleCgroupRoots removes the cgroup roots of test processes that
// died without their cleanups. Best effort.
func sweepStaleCgroupRoots() {
	hs, err := CgroupHierarchies()
	if err != nil || len(hs) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, h := range hs {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), cgroupRootPrefix)
			if !ok || seen[e.Name()] {
				continue
			}
			seen[e.Name()] = true
			pidStr, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidStr)
			if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
				continue
			}
			_ = RemoveCgroupTree("/"+e.Name(), 5*time.Second)
		}
	}
}
