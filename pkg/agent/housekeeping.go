package agent

import (
	"context"
	"os"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// housekeepingLoop runs on its own goroutine so that a slow runtime never
// stalls the sync loop.
func (a *Agent) housekeepingLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.HousekeepingPeriod)
	defer t.Stop()
	var lastGC time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range a.leftovers(a.relister.Snapshot()) {
			a.killer.Kill(p)
		}
		a.observed.pruneActed(func(uid types.UID, t time.Time) bool {
			return !a.wanted(uid) && a.relister.ListedSince(t)
		})
		// Only once every source is ready: a manifest dir not read yet must
		// not look like static pods gone.
		if a.cluster != nil && len(a.SourcesReady()) == 0 {
			for _, m := range a.pods.OrphanedMirrorPods() {
				if err := a.cluster.DeleteMirror(ctx, m); err != nil {
					klog.ErrorS(err, "Delete orphaned mirror pod", "pod", klog.KObj(m))
				}
			}
		}
		if a.gc != nil && a.cfg.ContainerGCPeriod > 0 && time.Since(lastGC) >= a.cfg.ContainerGCPeriod && len(a.SourcesReady()) == 0 {
			lastGC = time.Now()
			klog.V(4).InfoS("Housekeeping: container garbage collection and pod directory cleanup")
			if err := a.gc.GarbageCollect(ctx, a.wanted); err != nil {
				klog.ErrorS(err, "Container garbage collection")
			}
			a.removeOrphanedPodDirs(ctx)
		}
	}
}

// wanted reports whether a pod UID is still wanted on the node.
func (a *Agent) wanted(uid types.UID) bool {
	if _, ok := a.pods.PodByUID(uid); ok {
		return true
	}
	return a.workers.Has(uid)
}

// leftovers picks the runtime pods that nothing wants: not in the pod
// manager, no worker (a worker is stopping it), not already being killed,
// and from a source that is ready or no longer configured - so a slow source never gets its pods
// killed at start, and one missing source (an API server that never answers)
// never keeps the removed pods of another source running.
func (a *Agent) leftovers(listing []*runtime.Pod) []*runtime.Pod {
	var out []*runtime.Pod
	missing := a.SourcesReady()
	for _, p := range listing {
		if a.wanted(p.UID) || a.killer.Killing(p.UID) {
			continue
		}
		if p.Source == "" {
			if len(missing) > 0 {
				continue
			}
		} else if a.sources.Has(p.Source) && !a.SourceReady(p.Source) {
			continue
		}
		if !isRunning(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// isRunning: something of the pod still runs. Dead leftovers are container
// GC's to remove, not the killer's to kill again every pass.
func isRunning(p *runtime.Pod) bool {
	for _, s := range p.Sandboxes {
		if s.State == runtime.SandboxStateReady {
			return true
		}
	}
	for _, c := range p.Containers {
		if c.State == runtime.ContainerStateRunning || c.State == runtime.ContainerStateCreated {
			return true
		}
	}
	return false
}

// removeOrphanedPodDirs removes <root>/pods/<uid> of pods that are neither
// wanted nor in the runtime any more (volumes, tokens, emptyDirs), which
// container GC does not see.
func (a *Agent) removeOrphanedPodDirs(ctx context.Context) {
	if a.cfg.RootDir == "" {
		return
	}
	entries, err := os.ReadDir(layout.PodsDir(a.cfg.RootDir))
	if err != nil {
		return
	}
	inRuntime := map[types.UID]bool{}
	for _, p := range a.relister.Snapshot() {
		inRuntime[p.UID] = true
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || a.wanted(uid) || inRuntime[uid] {
			continue
		}
		a.removePodDir(ctx, uid)
	}
}

// removePodDir removes what is left on disk of a pod that is gone: the end
// of its termination, upstream's syncTerminatedPod.
func (a *Agent) removePodDir(ctx context.Context, uid types.UID) {
	ctx, span := a.tracer.Start(ctx, "syncTerminatedPod", trace.WithAttributes(semconv.K8SPodUIDKey.String(string(uid))))
	defer span.End()
	if err := a.rt.RemovePod(ctx, &runtime.PodStatus{UID: uid}); err != nil {
		span.RecordError(err)
		klog.ErrorS(err, "Remove directory of a removed pod", "uid", uid)
	}
}
