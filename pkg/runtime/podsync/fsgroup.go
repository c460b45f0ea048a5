package podsync

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

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
