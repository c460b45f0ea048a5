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

// TestUnmountLeavesForeignMounts: a mount in a pod's volume directory
// that is not a tmpfs of nodelet's (a bind of another directory, as an NFS
// share or a kubelet that used the root dir before would leave) stays
// mounted through UnmountPod and UnmountPlugin, whatever its filesystem.
func TestUnmountLeavesForeignMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to mount")
		}
		t.Skip("needs root to mount")
	}
	root, scratch := t.TempDir(), t.TempDir()
	foreign := layout.VolumeDir(root, "u", "kubernetes.io~nfs", "data")
	ownDir := layout.VolumeDir(root, "u", layout.PluginSecret, "s")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(scratch, foreign, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(foreign, unix.MNT_DETACH) })
	if err := Ensure(ownDir, 0o1777, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(ownDir, unix.MNT_DETACH) })

	if err := UnmountPlugin(root, "u", "kubernetes.io~nfs"); err != nil {
		t.Fatalf("UnmountPlugin: %v", err)
	}
	if err := UnmountPod(root, "u"); err != nil {
		t.Fatalf("UnmountPod: %v", err)
	}
	if m, err := mountinfo.Mounted(foreign); err != nil || !m {
		t.Fatalf("the foreign bind mount was taken away: mounted %v, %v", m, err)
	}
	if m, err := mountinfo.Mounted(ownDir); err != nil || m {
		t.Fatalf("nodelet's tmpfs is still mounted: %v, %v", m, err)
	}
	// Nor is a volume's content written onto such a mount.
	if err := Ensure(foreign, 0o755, 1<<20); err == nil {
		t.Fatal("Ensure accepted a bind mount of a disk directory as the volume's tmpfs")
	}
}
