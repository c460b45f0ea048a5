package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultFS is where the cgroup filesystems are mounted.
const DefaultFS = "/sys/fs/cgroup"

// hierarchy is one mounted cgroup hierarchy: a cgroup v1 one with its
// controllers (the mount's directory name, "cpu,cpuacct"), or the unified
// (v2) one, alone on a v2 host or beside v1 ones on a hybrid host, where it
// holds no controller but the runtime still makes its containers' cgroups
// there.
type hierarchy struct {
	dir         string
	v2          bool
	controllers []string
}

func (h hierarchy) has(controller string) bool { return slices.Contains(h.controllers, controller) }

// Mode is the host's cgroup mode.
type Mode string

// Modes: v2 is the unified hierarchy alone; v1 is legacy or hybrid (the
// controllers in v1 hierarchies, as runc then uses them).
const (
	ModeV1 Mode = "v1"
	ModeV2 Mode = "v2"
)

// detect finds the hierarchies mounted at fs and the host's mode.
func detect(fs string) (Mode, []hierarchy, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(fs, &st); err != nil {
		return "", nil, fmt.Errorf("cgroup filesystem at %s: %w", fs, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		ctrls, err := readControllers(fs)
		if err != nil {
			return "", nil, err
		}
		return ModeV2, []hierarchy{{dir: fs, v2: true, controllers: ctrls}}, nil
	}
	entries, err := os.ReadDir(fs)
	if err != nil {
		return "", nil, fmt.Errorf("cgroup filesystem at %s: %w", fs, err)
	}
	var hs []hierarchy
	for _, e := range entries {
		// Co-mounted controllers appear once as a directory and again as
		// symlinks (cpu -> cpu,cpuacct).
		if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		dir := filepath.Join(fs, e.Name())
		if err := unix.Statfs(dir, &st); err != nil {
			continue
		}
		switch st.Type {
		case unix.CGROUP_SUPER_MAGIC:
			hs = append(hs, hierarchy{dir: dir, controllers: strings.Split(e.Name(), ",")})
		case unix.CGROUP2_SUPER_MAGIC:
			hs = append(hs, hierarchy{dir: dir, v2: true})
		}
	}
	if len(hs) == 0 {
		return "", nil, fmt.Errorf("no cgroup hierarchy mounted under %s", fs)
	}
	return ModeV1, hs, nil
}

func readControllers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 controllers: %w", err)
	}
	return strings.Fields(string(b)), nil
}

// missingControllers names those of want no hierarchy has.
func missingControllers(hs []hierarchy, want ...string) []string {
	var out []string
	for _, c := range want {
		if !slices.ContainsFunc(hs, func(h hierarchy) bool { return h.has(c) }) {
			out = append(out, c)
		}
	}
	return out
}

// systemdRunning reports whether systemd is the init system (its
// documented check, sd_booted).
func systemdRunning() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// mkdirCgroup makes dir and its missing parents in hierarchy h. On v1 a
// new cpuset cgroup starts with no CPUs and memory nodes, so the parent's
// are copied in; on v2 the controllers are enabled in the parents'
// subtree_control so that the new cgroup gets their files.
func mkdirCgroup(h hierarchy, rel string) error {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	cur := h.dir
	for _, p := range parts {
		parent := cur
		cur = filepath.Join(cur, p)
		if h.v2 && len(h.controllers) > 0 {
			if err := enableControllers(parent, h.controllers); err != nil {
				return err
			}
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			if errors.Is(err, os.ErrExist) {
				continue
			}
			return fmt.Errorf("create cgroup %s: %w", cur, err)
		}
		if h.has("cpuset") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := copyFromParent(parent, cur, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func copyFromParent(parent, dir, file string) error {
	b, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", file, parent, err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
		return fmt.Errorf("set %s of %s: %w", file, dir, err)
	}
	return nil
}

// enableControllers enables in dir's subtree_control those of want (cpu,
// memory, pids) that dir has.
func enableControllers(dir string, want []string) error {
	have, err := readControllers(dir)
	if err != nil {
		return err
	}
	var add []string
	for _, c := range []string{ControllerCPU, ControllerMemory, ControllerPids} {
		if slices.Contains(have, c) && slices.Contains(want, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(add, " ")), 0o644); err != nil {
		return fmt.Errorf("enable %v in %s: %w", add, dir, err)
	}
	return nil
}

// writeFiles writes files into cgroup rel of the hierarchies that have
// their controller.
func writeFiles(hs []hierarchy, rel string, files []File) error {
	for _, f := range files {
		written := false
		for _, h := range hs {
			if !h.has(f.Controller) {
				continue
			}
			p := filepath.Join(h.dir, rel, f.Name)
			if err := os.WriteFile(p, []byte(f.Value), 0o644); err != nil {
				return fmt.Errorf("write %s = %s: %w", p, f.Value, err)
			}
			written = true
		}
		if !written {
			return fmt.Errorf("no hierarchy has the %s controller for %s", f.Controller, f.Name)
		}
	}
	return nil
}

// removeCgroup removes cgroup dir and the cgroups under it, deepest first
// (cgroup directories are removed with rmdir, never by unlinking their
// files). A cgroup already gone is no error; one with tasks left fails
// EBUSY.
func removeCgroup(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, removeCgroup(filepath.Join(dir, e.Name())))
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// killTasks sends SIGKILL to every process in cgroup dir and those under
// it, and returns how many it signalled.
func killTasks(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
				if unix.Kill(pid, unix.SIGKILL) == nil {
					n++
				}
			}
		}
		return nil
	})
	return n
}
