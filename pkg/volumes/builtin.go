package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/pkg/tmpfs"
)

// The volume types nodelet makes by itself, with no content from the API:
// emptyDir (on disk or, with medium Memory, a tmpfs) and hostPath. Their
// paths are criconfig.VolumeHostPath's; their tmpfs mounts are undone with
// the pod's (tmpfs.UnmountPod) and their directories go with the pod's.

// SetUpBuiltin makes an emptyDir or hostPath volume v of pod exist at
// path: an emptyDir directory (world-writable, owned by the pod's fsGroup)
// or a hostPath per its type (created for ...OrCreate, checked otherwise).
// It is cheap for a volume set up before.
func SetUpBuiltin(pod *v1.Pod, v *v1.Volume, path string) error {
	switch {
	case v.EmptyDir != nil:
		return setUpEmptyDir(pod, v.EmptyDir, path)
	case v.HostPath != nil:
		return checkHostPath(path, hostPathType(v))
	}
	return errors.New("not an emptyDir or hostPath volume")
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

// hostPathType returns how a hostPath volume's path must be checked or
// created before use.
func hostPathType(v *v1.Volume) v1.HostPathType {
	if v.HostPath == nil || v.HostPath.Type == nil {
		return v1.HostPathUnset
	}
	return *v.HostPath.Type
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

func checkHostPath(path string, typ v1.HostPathType) error {
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		return os.MkdirAll(path, 0o755)
	case v1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("hostPath type %s: %w", typ, err)
	}
	var ok bool
	switch typ {
	case v1.HostPathDirectory:
		ok = fi.IsDir()
	case v1.HostPathFile:
		ok = fi.Mode().IsRegular()
	case v1.HostPathSocket:
		ok = fi.Mode()&fs.ModeSocket != 0
	case v1.HostPathCharDev:
		ok = fi.Mode()&fs.ModeCharDevice != 0
	case v1.HostPathBlockDev:
		ok = fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0
	default:
		return fmt.Errorf("hostPath type %q unknown", typ)
	}
	if !ok {
		return fmt.Errorf("hostPath %s is not of type %s", path, typ)
	}
	return nil
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
