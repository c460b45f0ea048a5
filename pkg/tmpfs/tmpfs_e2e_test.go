//go:build e2e && linux

package tmpfs

import (
	"os"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/pkg/layout"
)

// TestEnsureAndUnmount mounts for real (root): Ensure mounts once and is a
// no-op on a mount point, UnmountPlugin takes away the mounts of its
// plugin only, and UnmountPod every one of the pod.
func TestEnsureAndUnmount(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to mount")
		}
		t.Skip("needs root to mount")
	}
	root := t.TempDir()
	dir := layout.VolumeDir(root, "u", layout.PluginSecret, "s")
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	for i := 0; i < 2; i++ {
		if err := Ensure(dir, 0o1777, 1<<20); err != nil {
			t.Fatalf("Ensure #%d: %v", i+1, err)
		}
	}
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dir))
	if err != nil || len(infos) != 1 || infos[0].FSType != "tmpfs" {
		t.Fatalf("mounts at %s after two Ensure calls: %v %v, want one tmpfs", dir, infos, err)
	}
	if err := UnmountPlugin(root, "u", layout.PluginConfigMap); err != nil {
		t.Fatalf("UnmountPlugin of another plugin: %v", err)
	}
	if m, err := mountinfo.Mounted(dir); err != nil || !m {
		t.Fatalf("not mounted after UnmountPlugin of another plugin: %v %v", m, err)
	}
	if err := UnmountPlugin(root, "u", layout.PluginSecret); err != nil {
		t.Fatalf("UnmountPlugin: %v", err)
	}
	if m, err := mountinfo.Mounted(dir); err != nil || m {
		t.Fatalf("still mounted after UnmountPlugin: %v %v", m, err)
	}
	if err := Ensure(dir, 0o1777, 1<<20); err != nil {
		t.Fatalf("Ensure again: %v", err)
	}
	if err := UnmountPod(root, "u"); err != nil {
		t.Fatalf("UnmountPod: %v", err)
	}
	if m, err := mountinfo.Mounted(dir); err != nil || m {
		t.Fatalf("still mounted after UnmountPod: %v %v", m, err)
	}
}
