package cleanup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// ErrForeignMount marks a directory left in place because a mount nodelet
// does not own is at or below it.
var ErrForeignMount = errors.New("mount not owned by nodelet")

// ErrOtherFilesystem marks a directory left in place because it is on
// another filesystem or mount than the tree being removed: the walk never
// crosses into one, even one the mount table did not list.
var ErrOtherFilesystem = errors.New("on another filesystem")

// readMounts is the mount table; tests replace it.
var readMounts = func(dir string) ([]Mount, error) {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	out := make([]Mount, 0, len(infos))
	for _, i := range infos {
		out = append(out, Mount{Point: i.Mountpoint, FSType: i.FSType, Source: i.Source})
	}
	return out, nil
}

// RemoveAll removes dir and everything below it, as os.RemoveAll, except
// what is not nodelet's: its own mounts (see Decide) are unmounted first;
// every other mount point is left in place, and so are its ancestors, with
// an error wrapping ErrForeignMount that names it. A dir that does not exist
// is not an error. dir's parent may be reached through symlinks (the root
// dir may be one); nothing below dir is followed.
func RemoveAll(dir string) error {
	real, err := resolve(dir)
	if err != nil || real == "" {
		return err
	}
	mounts, err := readMounts(real)
	if err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	plan := Decide(real, mounts)
	var errs []error
	for _, p := range plan.Unmount {
		if err := unmount(p); err != nil {
			errs = append(errs, err)
		}
	}
	keepOut := map[string]bool{}
	for _, r := range plan.Refused {
		keepOut[r.Mount.Point] = true
		errs = append(errs, fmt.Errorf("%w: %s (%s from %s) %s; left in place with its content",
			ErrForeignMount, r.Mount.Point, r.Mount.FSType, r.Mount.Source, r.Reason))
	}
	if keepOut[real] {
		return fmt.Errorf("removing %s: %w", dir, errors.Join(errs...))
	}
	// A failed unmount leaves a mount point: keep out of it as well.
	if len(errs) > len(plan.Refused) {
		if after, err := readMounts(real); err == nil {
			for _, m := range after {
				keepOut[m.Point] = true
			}
		}
	}
	if err := removeTree(real, keepOut); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// resolve returns dir with its symlinks resolved, or "" when it does not
// exist.
func resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("removing %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("removing %s: %w", dir, err)
	}
	return real, nil
}

// unmount detaches one of nodelet's mounts. Nothing uses the pod's mounts any
// more when its directory is removed; should something still hold one, a
// lazy detach is safe because Decide only hands out mounts with no foreign
// mount below them.
func unmount(p string) error {
	err := unix.Unmount(p, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(p, unix.UMOUNT_NOFOLLOW|unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", p, err)
	}
	return nil
}

// identity is where a directory lives: device and mount ID.
type identity struct {
	dev   uint64
	mntID uint64
}

func identify(fd int) (identity, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MNT_ID, &stx); err != nil {
		return identity{}, err
	}
	id := identity{dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor)}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		id.mntID = stx.Mnt_id
	}
	return id, nil
}

// removeTree removes root and its content, working from directory file
// descriptors opened with O_NOFOLLOW so that no path is resolved twice and
// no symlink is followed. It skips (and reports) directories in keepOut and
// any directory on another device or mount than root.
func removeTree(root string, keepOut map[string]bool) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		// Not a directory (or a symlink): remove the name only.
		return ignoreNotExist(unix.Unlink(root), root)
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", root, err)
	}
	id, err := identify(fd)
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("stat %s: %w", root, err)
	}
	w := walker{root: id, keepOut: keepOut}
	w.emptyDir(fd, root)
	if len(w.errs) == 0 {
		if err := unix.Rmdir(root); err != nil && !errors.Is(err, unix.ENOENT) {
			w.errs = append(w.errs, fmt.Errorf("removing %s: %w", root, err))
		}
	}
	return errors.Join(w.errs...)
}

type walker struct {
	root    identity
	keepOut map[string]bool
	errs    []error
}

// emptyDir removes everything in the directory open as fd (named path, for
// messages and keepOut) and closes fd. It reports whether the directory is
// now empty.
func (w *walker) emptyDir(fd int, path string) bool {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("reading %s: %w", path, err))
		return false
	}
	empty := true
	for _, name := range names {
		if !w.remove(fd, name, filepath.Join(path, name)) {
			empty = false
		}
	}
	return empty
}

// remove removes name in the directory dirfd; it reports success.
func (w *walker) remove(dirfd int, name, path string) bool {
	if w.keepOut[path] {
		return false // reported by RemoveAll, with the mount's details
	}
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return true
	}
	if !errors.Is(err, unix.EISDIR) {
		w.errs = append(w.errs, fmt.Errorf("removing %s: %w", path, err))
		return false
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("opening %s: %w", path, err))
		return false
	}
	id, err := identify(fd)
	if err != nil {
		unix.Close(fd)
		w.errs = append(w.errs, fmt.Errorf("stat %s: %w", path, err))
		return false
	}
	if id != w.root {
		unix.Close(fd)
		w.errs = append(w.errs, fmt.Errorf("%w: %s is a mount point or on another filesystem; left in place", ErrOtherFilesystem, path))
		return false
	}
	if !w.emptyDir(fd, path) {
		return false
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		w.errs = append(w.errs, fmt.Errorf("removing %s: %w", path, err))
		return false
	}
	return true
}

func ignoreNotExist(err error, path string) error {
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("removing %s: %w", path, err)
}
