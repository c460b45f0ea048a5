package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/layout"
)

// claimPlugin makes persistentVolumeClaim volumes whose PersistentVolume
// is on the node: local and hostPath PVs. The claim must be Bound to a
// volume bound back to it (claims.go); the volume's path is opened once,
// checked, and what was opened is bind-mounted (read-only for a read-only
// claim) at criconfig.VolumeHostPath, under
// volumes/kubernetes.io~local-volume/<volume>. A pod's fsGroup is applied to
// the content of a local volume when it is mounted (ownership.go). Other PV
// types are refused by name.
type claimPlugin struct {
	rootDir string
	claims  ClaimReader
	// bind mounts src (open, O_PATH) at target; tests replace it.
	bind func(fd int, target string, readOnly bool) error
}

func newClaimPlugin(rootDir string, claims ClaimReader) claimPlugin {
	return claimPlugin{rootDir: rootDir, claims: claims, bind: bindFD}
}

func (claimPlugin) Name() string                 { return "persistentVolumeClaim" }
func (claimPlugin) CanSupport(v *v1.Volume) bool { return v.PersistentVolumeClaim != nil }

// Check refuses a claim without a name (the API validation does too).
func (claimPlugin) Check(_ *v1.Pod, v *v1.Volume) error {
	if v.PersistentVolumeClaim.ClaimName == "" {
		return fmt.Errorf("volume %q: persistentVolumeClaim without claimName", v.Name)
	}
	return nil
}

// SetUp resolves the claim and mounts its volume at path, unless it is
// mounted there already (then it costs one mount table lookup: a pod's
// volume stays what it was first mounted as, as upstream).
func (p claimPlugin) SetUp(ctx context.Context, pod *v1.Pod, v *v1.Volume, path string) error {
	if mounted, err := mountinfo.Mounted(path); err == nil && mounted {
		return nil
	}
	pv, err := resolveClaim(ctx, p.claims, pod, v.PersistentVolumeClaim.ClaimName)
	if err != nil {
		// Upstream's WaitForAttachAndMount wording, which people search for.
		return fmt.Errorf("Unable to attach or mount volumes: unmounted volumes=[%s], unattached volumes=[], failed to process volumes=[%s]: %w", v.Name, v.Name, err)
	}
	if err := p.mount(ctx, pod, v, pv, path); err != nil {
		return fmt.Errorf("MountVolume.SetUp failed for volume %q (persistent volume %q): %w", v.Name, pv.Name, err)
	}
	return nil
}

func (p claimPlugin) mount(ctx context.Context, pod *v1.Pod, v *v1.Volume, pv *v1.PersistentVolume, path string) error {
	src, err := sourceOf(pv)
	if err != nil {
		return err
	}
	if src.local {
		node, err := p.claims.Node(ctx)
		if err != nil {
			return fmt.Errorf("read this node for the volume's node affinity: %w", err)
		}
		if err := checkNodeAffinity(pv, node); err != nil {
			return fmt.Errorf("MountVolume.NodeAffinity check failed: %w", err)
		}
	} else if err := checkHostPath(src.path, src.hostType); err != nil {
		return err
	}
	fd, err := p.openSource(src)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	readOnly := v.PersistentVolumeClaim.ReadOnly
	fsGroup, policy := podFSGroup(pod)
	// Upstream applies fsGroup to local volumes, not to hostPath ones, and
	// never to a read-only mount.
	if src.local && !readOnly {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		root := rootInfo{gid: st.Gid, mode: st.Mode, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR}
		if needsOwnership(fsGroup, policy, readOnly, root) {
			klog.V(2).InfoS("Setting volume ownership for fsGroup", "pod", klog.KObj(pod), "volume", v.Name, "fsGroup", *fsGroup)
			if err := setOwnership(fd, *fsGroup, readOnly); err != nil {
				return fmt.Errorf("set volume ownership for fsGroup %d: %w", *fsGroup, err)
			}
		}
	}
	if err := p.bind(fd, path, readOnly); err != nil {
		return err
	}
	klog.V(2).InfoS("Mounted persistent volume", "pod", klog.KObj(pod), "volume", v.Name, "persistentVolume", pv.Name, "path", src.path, "readOnly", readOnly)
	return nil
}

// openSource opens the volume's node path (O_PATH), following symlinks as
// the path names them (a local PV may be a link to its directory), and
// checks what it opened: it must exist, a local volume must be a
// directory, and it must not be the root filesystem or anything of
// nodelet's root directory (other pods' volumes). From here on only the
// descriptor is used, so a path swapped meanwhile changes nothing.
func (p claimPlugin) openSource(src pvSource) (int, error) {
	if !filepath.IsAbs(src.path) {
		return -1, fmt.Errorf("path %q is not absolute", src.path)
	}
	fd, err := unix.Open(src.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("path %s on the node: %w", src.path, err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	if src.local && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, fmt.Errorf("local volume path %s is not a directory (block devices are not supported)", src.path)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return -1, err
	}
	if err := checkResolved(src.path, real, p.rootDir); err != nil {
		return -1, err
	}
	ok = true
	return fd, nil
}

// checkResolved refuses a volume path that resolves to the node's root
// directory or into nodelet's root directory.
func checkResolved(path, real, rootDir string) error {
	if real == "/" {
		return fmt.Errorf("path %s resolves to the node's root directory", path)
	}
	root := filepath.Clean(rootDir)
	if rootDir != "" && (real == root || strings.HasPrefix(real, root+"/")) {
		return fmt.Errorf("path %s resolves to %s, inside nodelet's root directory %s", path, real, root)
	}
	return nil
}

// bindFD bind-mounts what fd opened at target, read-only if asked, and
// checks that what is mounted is what was opened.
func bindFD(fd int, target string, readOnly bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := prepareBindTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount at %s: %w", target, err)
	}
	undo := func(err error) error {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return err
	}
	if readOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return undo(fmt.Errorf("remount %s read-only: %w", target, err))
		}
	}
	var got unix.Stat_t
	if err := unix.Stat(target, &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		if err == nil {
			err = errors.New("mounted inode differs from the opened one")
		}
		return undo(fmt.Errorf("verify bind at %s: %w", target, err))
	}
	return nil
}

// prepareBindTarget makes target (nodelet's) an empty directory or file.
func prepareBindTarget(target string, isDir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	fi, err := os.Lstat(target)
	switch {
	case err == nil && fi.IsDir() == isDir && (isDir || fi.Mode().IsRegular()):
		return nil
	case err == nil:
		if err := os.Remove(target); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if isDir {
		return os.Mkdir(target, 0o750)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// TearDown unmounts every bind in the pod's local-volume directory: the
// mounts on the node are the truth, so this also covers what a nodelet
// before a restart (or the upstream kubelet, naming them by PV) mounted.
func (p claimPlugin) TearDown(_ context.Context, uid types.UID) error {
	return unmountBinds(layout.PluginDir(p.rootDir, uid, layout.PluginLocalVolume))
}

// Release unmounts the pod's persistent volumes once it is stopped: their
// data is the node's, and the pod holds nothing of it any more.
func (p claimPlugin) Release(ctx context.Context, uid types.UID) error {
	return p.TearDown(ctx, uid)
}

func unmountBinds(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		target := filepath.Join(dir, e.Name())
		for range 16 {
			mounted, err := mountinfo.Mounted(target)
			if err != nil || !mounted {
				break
			}
			if err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", target, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}
