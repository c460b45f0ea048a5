package volumes

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/tmpfs"
)

// emptyDirPlugin makes emptyDir volumes: a directory on the node's disk
// or, with medium Memory, a tmpfs, at criconfig.VolumeHostPath. The
// directory goes with the pod's; TearDown unmounts the tmpfs ones.
type emptyDirPlugin struct{ rootDir string }

func (emptyDirPlugin) Name() string                 { return "emptyDir" }
func (emptyDirPlugin) CanSupport(v *v1.Volume) bool { return v.EmptyDir != nil }

// Check refuses the media other than the default and Memory.
func (emptyDirPlugin) Check(_ *v1.Pod, v *v1.Volume) error { return criconfig.CheckVolume(v) }

// SetUp makes the directory (world-writable, owned by the pod's fsGroup),
// mounting the tmpfs of a Memory one first.
func (emptyDirPlugin) SetUp(_ context.Context, pod *v1.Pod, v *v1.Volume, path string) error {
	if err := setUpEmptyDir(pod, v.EmptyDir, path); err != nil {
		return fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return nil
}

func (p emptyDirPlugin) TearDown(_ context.Context, uid types.UID) error {
	return tmpfs.UnmountPlugin(p.rootDir, string(uid), layout.PluginEmptyDir)
}

func setUpEmptyDir(pod *v1.Pod, e *v1.EmptyDirVolumeSource, path string) error {
	if e.Medium == v1.StorageMediumMemory {
		if err := memoryEmptyDir(path, e.SizeLimit); err != nil {
			return err
		}
	}
	// World-writable like upstream: containers may run as any user.
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	return setEmptyDirMode(path, pod)
}

// memoryEmptyDir mounts a tmpfs for an emptyDir with medium Memory, sized
// by its sizeLimit or else by the node's memory, as upstream.
func memoryEmptyDir(path string, sizeLimit *resource.Quantity) error {
	var size int64
	if sizeLimit != nil && sizeLimit.Value() > 0 {
		size = sizeLimit.Value()
	} else {
		total, err := tmpfs.MemTotal()
		if err != nil {
			return err
		}
		size = total
	}
	// 1777, a tmpfs's own default and upstream's Memory emptyDir root.
	return tmpfs.Ensure(path, 0o777|os.ModeSticky, size)
}

// setEmptyDirMode makes an emptyDir world-writable like upstream
// (containers may run as any user) and, with the pod's fsGroup, owned by
// that group and setgid, so that what any container creates in it belongs
// to the group. Only the volume's own directory is changed: nodelet created
// it before any container could write into it, and nothing a container
// planted in it (a symlink to a node file) is ever followed. Nothing is
// written when the mode is right already: a sibling container may be
// creating files in it at that moment.
func setEmptyDirMode(path string, pod *v1.Pod) error {
	mode := uint32(0o777)
	gid := -1
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		mode |= unix.S_ISGID
		gid = int(*sc.FSGroup)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", path)
	}
	// A tmpfs root is sticky (1777); upstream adds to the mode rather than
	// replacing it, so a Memory emptyDir with an fsGroup is 3777.
	mode |= st.Mode & unix.S_ISVTX
	if gid >= 0 && int(st.Gid) != gid {
		if err := unix.Lchown(path, -1, gid); err != nil {
			return fmt.Errorf("fsGroup %d: %w", gid, err)
		}
		// chown clears setgid: set the mode again below.
		st.Mode &^= unix.S_ISGID
	}
	if st.Mode&0o7777 != mode {
		goMode := os.FileMode(mode & 0o777)
		if mode&unix.S_ISGID != 0 {
			goMode |= os.ModeSetgid
		}
		if mode&unix.S_ISVTX != 0 {
			goMode |= os.ModeSticky
		}
		if err := os.Chmod(path, goMode); err != nil {
			return err
		}
	}
	return nil
}
