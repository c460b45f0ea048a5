//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestCleanupLeavesForeignMounts takes over a root dir that another kubelet
// left with mounts in the directory of a pod that is gone: a bind mount of a
// scratch directory (a volume nodelet never made), a tmpfs volume and a
// subPath bind mount (the kinds nodelet makes). nodelet's housekeeping
// removes the orphaned pod directory: its own kinds are unmounted and gone,
// the foreign bind mount stays mounted with its file, and the refusal is
// logged naming the mount.
func TestCleanupLeavesForeignMounts(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)

	scratch := t.TempDir()
	if err := os.WriteFile(filepath.Join(scratch, "precious"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(n.RootDir, "pods", "0f0e0d0c-0000-4000-8000-00000000c1ea")
	foreign := filepath.Join(podDir, "volumes", "kubernetes.io~nfs", "data")
	secret := filepath.Join(podDir, "volumes", "kubernetes.io~secret", "token")
	subPath := filepath.Join(podDir, "volume-subpaths", "data", "app", "0")
	for _, d := range []string{foreign, secret, subPath} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mount := func(src, dst, fstype string, flags uintptr) {
		t.Helper()
		if err := unix.Mount(src, dst, fstype, flags, ""); err != nil {
			t.Fatalf("mount %s on %s: %v", src, dst, err)
		}
		// Registered per mount, deepest last: cleanups run in reverse.
		t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	}
	mount(scratch, foreign, "", unix.MS_BIND)
	mount("tmpfs", secret, "tmpfs", 0)
	if err := os.WriteFile(filepath.Join(secret, "token"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	mount(scratch, subPath, "", unix.MS_BIND)
	if err := os.WriteFile(filepath.Join(podDir, "etc-hosts"), []byte("127.0.0.1 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	n.Start()

	poll.Within(t, 60*time.Second, "a refusal logged for "+foreign, func() (bool, string) {
		return strings.Contains(n.Log(), "not owned by nodelet"), ""
	})
	log := n.Log()
	if !strings.Contains(log, foreign) {
		t.Errorf("the refusal does not name the mount %s", foreign)
	}
	if b, err := os.ReadFile(filepath.Join(scratch, "precious")); err != nil || string(b) != "keep me" {
		t.Fatalf("the file on the foreign mount is gone or changed: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "precious")); err != nil || string(b) != "keep me" {
		t.Errorf("the foreign mount is no longer mounted in place: %q, %v", b, err)
	}
	for _, p := range []string{secret, subPath, filepath.Join(podDir, "volume-subpaths"), filepath.Join(podDir, "etc-hosts")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was not removed", p)
		}
	}
	if mounted(t, secret) || mounted(t, subPath) {
		t.Error("nodelet's own mounts were not unmounted")
	}
}

// mounted reports whether p is a mount point in the mount table.
func mounted(t *testing.T, p string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}
