//go:build e2e && linux

package subpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// TestBind mounts for real (root): a subPath bound at its target shows the
// volume's content; after the pod swaps the directory for a symlink to /,
// binding again is refused and the old bind is gone, so a restarted
// container never sees the node.
func TestBind(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to mount")
		}
		t.Skip("needs root to mount")
	}
	vol, node := t.TempDir(), t.TempDir()
	t.Cleanup(func() { unmountAll(t, node) })
	if err := os.MkdirAll(filepath.Join(vol, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "sub/f"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(node, "volume-subpaths/v/c/0")
	req := Request{VolumePath: vol, Path: "sub", Target: target}
	if err := Bind(req); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "f")); err != nil || string(b) != "inside" {
		t.Fatalf("through the bind: %q %v", b, err)
	}
	// Binding again (a container restart) replaces the bind, not stacks it.
	if err := Bind(req); err != nil {
		t.Fatal(err)
	}
	if n := len(mounted(t, node)); n != 1 {
		t.Errorf("%d mounts after a rebind, want 1", n)
	}

	if err := os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(vol, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := Bind(req); !errors.Is(err, ErrEscapes) {
		t.Fatalf("bind through a symlink to /: %v, want ErrEscapes", err)
	}
	if m, err := mountinfo.Mounted(target); err != nil || m {
		t.Errorf("old bind still mounted at the target after a refused rebind (%v)", err)
	}

	// A file subPath binds onto a file target.
	freq := Request{VolumePath: vol, Path: "old/f", Target: filepath.Join(node, "volume-subpaths/v/c/1")}
	if err := Bind(freq); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(freq.Target); err != nil || string(b) != "inside" {
		t.Fatalf("file bind: %q %v", b, err)
	}
	unmountAll(t, node)
	if left := mounted(t, node); len(left) != 0 {
		t.Errorf("left mounted: %v", left)
	}
}

func mounted(t *testing.T, dir string) []string {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range infos {
		out = append(out, m.Mountpoint)
	}
	return out
}

func unmountAll(t *testing.T, dir string) {
	t.Helper()
	for _, p := range mounted(t, dir) {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", p, err)
		}
	}
}
