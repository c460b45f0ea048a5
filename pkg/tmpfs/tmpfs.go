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
// the given root mode and size limit. A dir that is already a mount point
// is left as it is, so it is cheap to call before every write.
func Ensure(dir string, perm os.FileMode, size int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	mounted, err := mountinfo.Mounted(dir)
	if err != nil {
		return fmt.Errorf("mount check: %w", err)
	}
	if mounted {
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", mountFlags, Options(perm, size)); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// UnmountPod unmounts every mount point at
// <root>/pods/<uid>/volumes/kubernetes.io~*/<volume>, the places Ensure is
// used on. Mounts elsewhere are not nodelet's doing and are left alone. A
// pod without volumes is fine.
func UnmountPod(root, uid string) error {
	if root == "" || uid == "" {
		return nil
	}
	base := layout.VolumesDir(root, types.UID(uid))
	types, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range types {
		if t.IsDir() {
			errs = append(errs, unmountVolumes(filepath.Join(base, t.Name())))
		}
	}
	return errors.Join(errs...)
}

// UnmountPlugin is UnmountPod for the volumes of one plugin
// (layout.PluginEmptyDir, ...) only.
func UnmountPlugin(root, uid, plugin string) error {
	if root == "" || uid == "" {
		return nil
	}
	err := unmountVolumes(layout.PluginDir(root, types.UID(uid), plugin))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// unmountVolumes unmounts every mount point directly in a plugin
// directory.
func unmountVolumes(dir string) error {
	vols, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vols {
		if !v.IsDir() {
			continue
		}
		vol := filepath.Join(dir, v.Name())
		mounted, err := mountinfo.Mounted(vol)
		if err != nil || !mounted {
			errs = append(errs, err)
			continue
		}
		if err := unix.Unmount(vol, unix.UMOUNT_NOFOLLOW); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", vol, err))
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
