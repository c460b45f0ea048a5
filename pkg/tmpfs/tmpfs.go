// Package tmpfs mounts the memory-backed filesystems that hold pod volumes
// which must never reach the node's disk (secrets, tokens, projected and
// downward API content, emptyDir with medium Memory), and unmounts them when
// the pod's volumes are torn down.
//
// Every such mount sits exactly at
// <root>/pods/<uid>/volumes/kubernetes.io~<type>/<volume>, the upstream
// layout, so whoever removes a pod directory knows where mounts may be.
package tmpfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/layout"
)

// Flags of every volume tmpfs: nothing on it may act as a device or gain
// privileges through set-id bits.
const mountFlags = unix.MS_NOSUID | unix.MS_NODEV

// Options returns the tmpfs mount data for a volume root with mode perm and,
// when size > 0, a size limit in bytes.
func Options(perm os.FileMode, size int64) string {
	mode := uint64(perm.Perm())
	if perm&os.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	o := "mode=" + strconv.FormatUint(mode, 8)
	if size > 0 {
		o += ",size=" + strconv.FormatInt(size, 10)
	}
	return o
}

// Ensure makes dir (created if missing, parents 0750) a tmpfs mount with
// the given root mode and size limit. A dir that is already a tmpfs mount
// is left as it is, so it is cheap to call before every write; a mount of
// anything else there is refused, so a secret is never written onto a
// filesystem that is not in memory (or not nodelet's).
func Ensure(dir string, perm os.FileMode, size int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	mounted, err := mountinfo.Mounted(dir)
	if err != nil {
		return fmt.Errorf("mount check: %w", err)
	}
	if mounted {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return fmt.Errorf("mount check: %w", err)
		}
		if st.Type != unix.TMPFS_MAGIC {
			return fmt.Errorf("%s is a mount point of another filesystem (type %#x), not a tmpfs: refusing to write volume content there", dir, st.Type)
		}
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", mountFlags, Options(perm, size)); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// UnmountPod unmounts the tmpfs mounted by Ensure at
// <root>/pods/<uid>/volumes/kubernetes.io~*/<volume>. Any other mount
// there (a volume of a kubelet that used the root dir before, an NFS share
// bind-mounted by hand) is not nodelet's doing and is left alone: the
// pod directory's cleanup reports it instead of deleting through it. A pod
// without volumes is fine.
func UnmountPod(root, uid string) error {
	if root == "" || uid == "" {
		return nil
	}
	return unmountTmpfs(layout.VolumesDir(root, types.UID(uid)), 2)
}

// UnmountPlugin is UnmountPod for the volumes of one plugin
// (layout.PluginEmptyDir, ...) only.
func UnmountPlugin(root, uid, plugin string) error {
	if root == "" || uid == "" {
		return nil
	}
	return unmountTmpfs(layout.PluginDir(root, types.UID(uid), plugin), 1)
}

// unmountTmpfs unmounts every tmpfs whose mount point is depth levels
// below base, as the mount table shows it: a directory's being a mount
// point says nothing about whose mount it is, its filesystem type does
// (nodelet mounts only tmpfs there).
func unmountTmpfs(base string, depth int) error {
	base, err := filepath.Abs(base)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	} else if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else {
		return err
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		parent := m.Mountpoint
		for range depth {
			parent = filepath.Dir(parent)
		}
		return m.FSType != "tmpfs" || parent != base, false
	})
	if err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	var errs []error
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m.Mountpoint, err))
		}
	}
	return errors.Join(errs...)
}

// MemTotal returns the node's memory in bytes, the size of a Memory
// emptyDir without a sizeLimit (upstream sizes it by the node's allocatable
// memory; nodelet reserves none, so that is all of it).
func MemTotal() (int64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("sysinfo: %w", err)
	}
	return int64(si.Totalram) * int64(si.Unit), nil
}
