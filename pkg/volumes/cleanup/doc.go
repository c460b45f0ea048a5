// Package cleanup removes a pod's directory (and other nodelet-owned trees)
// without ever destroying what nodelet does not own. A root dir may be taken
// over from another kubelet, or an operator may have mounted something into a
// pod directory: os.RemoveAll would descend into such a mount and delete its
// content. Here the mount table decides first (Decide, a pure function over
// the parsed /proc/self/mountinfo): nodelet's own mounts are unmounted, any
// other mount point is left in place and reported by name, and the removal
// walk never enters a mount point, never crosses to another filesystem or
// mount, and never follows a symlink.
package cleanup
