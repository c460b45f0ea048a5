package volumes

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// Volume ownership for a pod's fsGroup, as upstream applies it to the
// existing content of a persistent volume when it mounts it: every file and
// directory gets the group fsGroup and group read-write (read-only for a
// read-only volume), directories also group execute and setgid, so that
// what the containers create belongs to the group too. With
// fsGroupChangePolicy OnRootMismatch the walk is skipped when the volume's
// root already has the group and those permissions.

const (
	rwMask   = 0o660
	roMask   = 0o440
	execMask = 0o110
)

// rootInfo is what the ownership decision needs of a volume's root.
type rootInfo struct {
	gid   uint32
	mode  uint32 // st_mode: type and permission bits
	isDir bool
}

// needsOwnership reports whether the volume's content must be re-owned for
// the pod's fsGroup: never without an fsGroup; always with policy Always
// (or unset); with OnRootMismatch only when the root's group or
// permissions (group rw, and for a directory group x and setgid) differ
// from what the walk would give it.
func needsOwnership(fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool, root rootInfo) bool {
	if fsGroup == nil {
		return false
	}
	if policy == nil || *policy != v1.FSGroupChangeOnRootMismatch {
		return true
	}
	if int64(root.gid) != *fsGroup || !root.isDir {
		return true
	}
	want := uint32(rwMask)
	if readOnly {
		want = roMask
	}
	want |= execMask
	if root.mode&want != want {
		return true
	}
	return root.mode&unix.S_ISGID == 0
}

// ownedMode is the permission bits (with setgid) an entry of mode gets
// for the fsGroup: its own bits plus group (and owner) read-write, or read
// for a read-only volume, and for a directory execute and setgid.
func ownedMode(mode uint32, isDir, readOnly bool) uint32 {
	mask := uint32(rwMask)
	if readOnly {
		mask = roMask
	}
	if isDir {
		mask |= execMask | unix.S_ISGID
	}
	return (mode & 0o7777) | mask
}

// podFSGroup returns the pod's fsGroup and fsGroupChangePolicy.
func podFSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil, nil
	}
	return sc.FSGroup, sc.FSGroupChangePolicy
}

// maxOwnershipDepth bounds the walk: a deeper tree is refused rather than
// followed down to exhausting descriptors.
const maxOwnershipDepth = 256

// setOwnership re-owns everything under the directory dirfd (the volume's
// root, open) for gid. The content is the pod's and hostile: the walk goes
// by descriptors, opens every name beneath the directory it was found in
// with O_NOFOLLOW, and never follows a symlink (a symlink's own group is
// changed, its mode is not, as upstream).
func setOwnership(dirfd int, gid int64, readOnly bool) error {
	if err := ownEntry(dirfd, readOnly, int(gid)); err != nil {
		return fmt.Errorf("volume root: %w", err)
	}
	return ownTree(dirfd, int(gid), readOnly, 0)
}

// ownEntry changes the group and mode of the open entry fd (O_PATH).
func ownEntry(fd int, readOnly bool, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := unix.Fchownat(fd, "", -1, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	mode := ownedMode(st.Mode, st.Mode&unix.S_IFMT == unix.S_IFDIR, readOnly)
	// Through the descriptor: nothing swapped in meanwhile is changed.
	if err := unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}

// ownTree re-owns the entries of the directory dirfd, recursively.
func ownTree(dirfd, gid int, readOnly bool, depth int) error {
	if depth > maxOwnershipDepth {
		return fmt.Errorf("directory tree deeper than %d levels", maxOwnershipDepth)
	}
	rd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(rd)
	unix.Close(rd)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // removed meanwhile
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if err := ownEntry(fd, readOnly, gid); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if err := ownTree(fd, gid, readOnly, depth+1); err != nil {
				errs = append(errs, fmt.Errorf("%s/%w", name, err))
			}
		}
		unix.Close(fd)
		if len(errs) > 10 {
			break
		}
	}
	return errors.Join(errs...)
}

// readNames lists the directory open at fd, without "." and "..".
func readNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
