//go:build linux

// Package subpath makes a volume's subPath available to the runtime without
// letting the pod choose what of the node gets mounted.
//
// A subPath names a path inside a volume that the pod itself can write
// (emptyDir, hostPath). Joining strings and handing the result to the runtime
// would follow any symlink the pod planted there (`ln -s / x`, then mount
// subPath x: the node's root filesystem, read-write; CVE-2017-1002101). Checking
// first and mounting later is a race the pod can win. So the path is opened
// beneath the volume, component by component, with the kernel refusing every
// step that leaves it (openat2 RESOLVE_BENEATH), and what was opened, not what
// the path names, is bind-mounted through /proc/self/fd to a node-owned target
// under <root-dir>/pods/<uid>/volume-subpaths. The runtime mounts that target;
// the pod cannot change what it is.
package subpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// ErrEscapes marks a subPath that resolves outside its volume, through a
// symlink or otherwise. It is the pod's doing, never retried into success.
var ErrEscapes = errors.New("resolves outside the volume")

// Request is one subPath to bind.
type Request struct {
	// VolumePath is the node directory backing the volume. It is trusted
	// (chosen by nodelet, or the hostPath the pod spec names); nothing under
	// it is.
	VolumePath string
	// Path is the subPath, relative to the volume; it must already be free of
	// absolute paths and ".." components (the spec is validated before).
	Path string
	// Target is where the opened path is bind-mounted: a node-owned path the
	// pod cannot reach.
	Target string
}

// Bind opens r.Path beneath r.VolumePath, creating missing directories with
// the volume's mode as upstream does (a subPath that does not exist yet is a
// directory the container will fill), and bind-mounts what it opened at
// r.Target, replacing an earlier bind there.
func Bind(r Request) error {
	if err := checkRelative(r.Path); err != nil {
		return err
	}
	// An earlier container instance left its bind here; the subPath may
	// since point elsewhere, so it is opened and bound afresh every time, and
	// a refused subPath leaves nothing mounted.
	if err := releaseTarget(r.Target); err != nil {
		return err
	}
	vol, err := unix.Open(r.VolumePath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open volume %s: %w", r.VolumePath, err)
	}
	defer unix.Close(vol)
	var volStat unix.Stat_t
	if err := unix.Fstat(vol, &volStat); err != nil {
		return fmt.Errorf("stat volume %s: %w", r.VolumePath, err)
	}

	fd, err := openBeneath(vol, r.Path, volStat.Mode&0o7777)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat subPath %q: %w", r.Path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR

	if err := prepareTarget(r.Target, isDir); err != nil {
		return err
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, r.Target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind subPath %q to %s: %w", r.Path, r.Target, err)
	}
	// What is mounted must be what was opened; anything else is a bug or an
	// attack on the target itself, and must not reach a container.
	var got unix.Stat_t
	if err := unix.Stat(r.Target, &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		_ = unix.Unmount(r.Target, unix.MNT_DETACH)
		if err == nil {
			err = errors.New("mounted inode differs from the opened one")
		}
		return fmt.Errorf("verify subPath bind at %s: %w", r.Target, err)
	}
	return nil
}

// checkRelative refuses what the API validation refuses, in case a pod
// reached here without it (manifests are hostile).
func checkRelative(p string) error {
	if p == "" || filepath.IsAbs(p) {
		return fmt.Errorf("subPath %q: must be a relative path", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Errorf("subPath %q: %w (contains '..')", p, ErrEscapes)
		}
	}
	return nil
}

// openBeneath opens path (relative) beneath the directory dirfd as an O_PATH
// descriptor. Symlinks that stay beneath dirfd are followed; an absolute
// symlink or one that climbs out fails with ErrEscapes. Missing components are
// created as directories with mode perm.
func openBeneath(dirfd int, path string, perm uint32) (int, error) {
	fd, err := openat2Beneath(dirfd, path)
	if err == nil {
		return fd, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return -1, describe(path, err)
	}
	// Create what is missing, one component at a time. Each mkdirat works on
	// a directory opened beneath the volume with a single name, so it cannot
	// land outside it; whatever already exists under that name (a symlink
	// planted meanwhile) is checked by the next openat2.
	parts := strings.Split(filepath.Clean(path), "/")
	parent, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	for i, name := range parts {
		next, err := openat2Beneath(dirfd, strings.Join(parts[:i+1], "/"))
		if errors.Is(err, unix.ENOENT) {
			created := true
			if err := unix.Mkdirat(parent, name, perm); err != nil {
				if !errors.Is(err, unix.EEXIST) {
					unix.Close(parent)
					return -1, fmt.Errorf("subPath %q: create %q: %w", path, name, err)
				}
				created = false
			}
			next, err = openat2Beneath(dirfd, strings.Join(parts[:i+1], "/"))
			// mkdir's mode went through nodelet's umask; the directory gets the
			// volume's mode (g+rwx for an fsGroup), as upstream. Changed through
			// the descriptor just opened beneath the volume, never by name: a
			// symlink swapped in meanwhile cannot redirect the chmod.
			if err == nil && created {
				if cerr := unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", next), perm, 0); cerr != nil {
					unix.Close(parent)
					unix.Close(next)
					return -1, fmt.Errorf("subPath %q: set mode of %q: %w", path, name, cerr)
				}
			}
		}
		unix.Close(parent)
		if err != nil {
			return -1, describe(path, err)
		}
		parent = next
	}
	return parent, nil
}

// openat2Beneath is openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) with a
// component-wise O_NOFOLLOW walk where the kernel lacks openat2 (before 5.6).
func openat2Beneath(dirfd int, path string) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			// EAGAIN: a rename raced the lookup; the kernel asks to retry.
			continue
		case errors.Is(err, unix.ENOSYS):
			return openNoFollow(dirfd, path)
		}
		return fd, err
	}
}

// openNoFollow walks path from dirfd opening each component with O_NOFOLLOW:
// any symlink at all is refused (stricter than openat2, which allows those
// that stay inside).
func openNoFollow(dirfd int, path string) (int, error) {
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(filepath.Clean(path), "/") {
		if name == "." {
			continue
		}
		if name == ".." {
			unix.Close(cur)
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, unix.ELOOP
		}
		cur = next
	}
	return cur, nil
}

// describe turns the kernel's refusals into what they mean for a subPath.
func describe(path string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("subPath %q %w (a symlink in it points out of the volume): %w", path, ErrEscapes, err)
	default:
		return fmt.Errorf("subPath %q: %w", path, err)
	}
}

// releaseTarget unmounts whatever is bound at target. Bounded: a target
// carries no more binds than nodelet stacked there. mountinfo.Mounted
// follows a symlink at target; the unmount does not, so a symlink planted
// there fails the bind instead of unmounting what it points to.
func releaseTarget(target string) error {
	for i := 0; i < 16; i++ {
		mounted, err := mountinfo.Mounted(target)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("subPath target %s: %w", target, err)
		}
		if !mounted {
			return nil
		}
		if err := unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
			return fmt.Errorf("unmount old subPath bind %s: %w", target, err)
		}
	}
	return fmt.Errorf("subPath target %s: still mounted after 16 unmounts", target)
}

// prepareTarget makes the unmounted target a directory or empty file,
// matching the kind of what will be bound there. The target is nodelet's:
// whatever is in the way is replaced.
func prepareTarget(target string, isDir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("subPath target %s: %w", target, err)
	}
	fi, err := os.Lstat(target)
	switch {
	case err == nil && fi.IsDir() == isDir && (isDir || fi.Mode().IsRegular()):
		return nil
	case err == nil:
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("subPath target %s: %w", target, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("subPath target %s: %w", target, err)
	}
	if isDir {
		if err := os.Mkdir(target, 0o750); err != nil {
			return fmt.Errorf("subPath target %s: %w", target, err)
		}
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("subPath target %s: %w", target, err)
	}
	return f.Close()
}
