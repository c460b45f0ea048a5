package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/tmpfs"
)

// changeWorkers rewrite the volumes of pods whose objects changed, a few
// pods at a time: one config map shared by a hundred pods must reach all of
// them within seconds.
const changeWorkers = 4

// refreshChanged rewrites the volumes of the pods queued by the watches and
// wakes them, until the queue shuts down.
func (p *Provider) refreshChanged(ctx context.Context) {
	for {
		uid, quit := p.changed.Get()
		if quit {
			return
		}
		p.mu.Lock()
		t := p.tracked[uid]
		p.mu.Unlock()
		if t != nil {
			var current *v1.Pod
			if p.pods != nil {
				current, _ = p.pods.PodByUID(uid)
			}
			p.refresh(ctx, t, current)
		}
		if p.wake != nil {
			// Also for a pod whose volumes were fine: its containers
			// may wait for an env var from the object.
			p.wake(uid)
		}
		p.changed.Done(uid)
	}
}

// Teardown is Cleanup for a pod whose containers are all stopped for good
// (it left the node): its tmpfs volumes are unmounted at once, so secrets
// do not stay in memory until its directory is removed. Failures are
// logged; removing the pod directory tries again.
func (p *Provider) Teardown(uid types.UID) {
	p.Cleanup(uid)
	if err := tmpfs.UnmountPod(p.rootDir, string(uid)); err != nil {
		klog.ErrorS(err, "Could not unmount the volumes of a removed pod", "podUID", uid)
	}
}

// mountVolumeTmpfs makes a volume directory a tmpfs mount, so the content
// never reaches the node's disk. Only root reaches the plugin directory
// above it: other local users of the node cannot read what pods get. The
// volume's own root is 0755 (group fsGroup, set-gid, with one) as
// the container sees it, read-only.
func mountVolumeTmpfs(dir string, fsGroup *int64) error {
	if err := ensurePrivateParent(dir); err != nil {
		return err
	}
	if err := tmpfs.Ensure(dir, 0o755, 0); err != nil {
		return err
	}
	if fsGroup != nil {
		return setGroupRoot(dir, int(*fsGroup))
	}
	return nil
}

// ensurePrivateParent creates the plugin directory above a volume
// (kubernetes.io~secret, ...) readable by root only.
func ensurePrivateParent(dir string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	return os.Chmod(parent, 0o700)
}

// setGroupRoot gives a volume's root to the fsGroup, new entries
// inheriting it, as upstream sets volume ownership.
func setGroupRoot(dir string, gid int) error {
	if err := os.Lchown(dir, -1, gid); err != nil {
		return fmt.Errorf("set group of %s: %w", dir, err)
	}
	return os.Chmod(dir, 0o755|os.ModeSetgid)
}
