// Package worker runs one goroutine per pod. The sync loop hands it work
// (create, update, sync, kill); each pod's goroutine syncs its pod alone, so a
// slow pod never holds up another. Work for a pod that is still syncing is
// coalesced: only the latest request waits. The Killer stops pods that have
// no worker (leftovers found by housekeeping) without blocking its caller.
package worker

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateType says why a pod is being synced.
type UpdateType int

const (
	// Sync is a periodic or event-driven resync with an unchanged spec.
	Sync UpdateType = iota
	// Create is the first sync of a pod new to the node.
	Create
	// Update follows a change of the pod's spec, labels or annotations.
	Update
	// Kill stops the pod's containers and sandbox.
	Kill
)

func (t UpdateType) String() string {
	return [...]string{"sync", "create", "update", "kill"}[t]
}

// Work is one request to a pod's worker.
type Work struct {
	Pod       *v1.Pod
	MirrorPod *v1.Pod
	Type      UpdateType
	// GracePeriod overrides the pod's terminationGracePeriodSeconds (Kill).
	GracePeriod *int64
	// Forget ends the worker once the kill is done (the pod left its source).
	Forget bool
	// Relisted, set only on a Sync that the relister alone asked for, is
	// what that relist saw: the sync may skip a runtime state it already
	// knows. Any other reason to sync clears it when requests coalesce.
	Relisted *Relisted
	// Periodic is set only on the resync the worker's own timer asked for
	// after a sync that asked for nothing (--sync-frequency), not on a
	// retry after an error or a back-off: the sync may skip a pod whose
	// runtime state the relister shows unchanged since it last looked.
	// Any other reason to sync clears it when requests coalesce.
	Periodic bool
}

// Relisted describes the runtime listing that noticed a pod change.
type Relisted struct {
	// Fingerprint of the pod in that listing (pleg.Fingerprint).
	Fingerprint string
	// At is when the listing had completed.
	At time.Time
}

// Result is what a sync reports back to its worker.
type Result struct {
	// RetryAfter asks for another sync after that long (a backoff ends).
	RetryAfter time.Duration
	Err        error
	// Skipped: the sync found nothing to do without looking at the
	// runtime; the worker keeps its timers (a pending retry stays due).
	Skipped bool
}

// SyncFunc brings one pod to what w asks. It runs on the pod's own goroutine.
type SyncFunc func(ctx context.Context, w Work) Result

// Options tune the workers.
type Options struct {
	// ResyncPeriod is how often an idle pod is synced anyway (--sync-frequency).
	ResyncPeriod time.Duration
	// ErrorBackoff is the first delay after a failed sync; it doubles up to
	// ResyncPeriod.
	ErrorBackoff time.Duration
	// OnForgotten is called, from the worker's goroutine, after a pod's last
	// kill when its worker is gone.
	OnForgotten func(uid types.UID)
}

// Workers owns the per-pod goroutines.
type Workers struct {
	ctx  context.Context
	sync SyncFunc
	opts Options
	wg   sync.WaitGroup

	mu      sync.Mutex
	workers map[types.UID]*podWorker
}

// podWorker's fields other than wake are guarded by Workers.mu.
type podWorker struct {
	uid     types.UID
	wake    chan struct{} // capacity 1: a pending wake-up is never lost, never doubled
	pending *Work
	last    *Work
	killed  bool // the pod was killed; plain syncs must not start it again
	// cancel ends the sync in progress, when it is not a kill: a kill
	// must not wait for a sync stuck in a postStart hook or a slow call.
	cancel context.CancelFunc
}

// New returns Workers whose goroutines live until ctx is done.
func New(ctx context.Context, sync SyncFunc, opts Options) *Workers {
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = time.Minute
	}
	if opts.ErrorBackoff <= 0 {
		opts.ErrorBackoff = time.Second
	}
	return &Workers{ctx: ctx, sync: sync, opts: opts, workers: map[types.UID]*podWorker{}}
}

// Update hands w to the pod's worker, starting one if needed. It never blocks
// on a sync in progress.
func (ws *Workers) Update(w Work) {
	uid := w.Pod.UID
	ws.mu.Lock()
	pw, ok := ws.workers[uid]
	if !ok {
		pw = &podWorker{uid: uid, wake: make(chan struct{}, 1)}
		ws.workers[uid] = pw
		ws.wg.Add(1)
		go ws.run(pw)
	}
	pw.pending = coalesce(pw.pending, &w)
	if w.Type == Kill && pw.cancel != nil {
		pw.cancel()
	}
	ws.mu.Unlock()
	select {
	case pw.wake <- struct{}{}:
	default:
	}
}

// coalesce merges a new request into the one already waiting. A kill is never
// downgraded to a sync; a pod re-added after its removal was requested wins
// over the kill.
func coalesce(old, w *Work) *Work {
	if old == nil {
		return w
	}
	if old.Relisted == nil && w.Type == Sync && w.Relisted != nil {
		// A relist adds nothing to a sync already wanted for another
		// reason; that sync must not become skippable.
		merged := *w
		merged.Relisted = nil
		w = &merged
	}
	merged := merge(old, w)
	if merged.Periodic {
		// Another reason to sync came: the sync is no longer only the
		// periodic one, and must not be skipped as such.
		c := *merged
		c.Periodic = false
		merged = &c
	}
	return merged
}

// merge is coalesce by request type.
func merge(old, w *Work) *Work {
	switch {
	case w.Type == Kill:
		return w
	case old.Type == Kill && w.Type != Create:
		merged := *old
		merged.Pod = w.Pod
		merged.MirrorPod = w.MirrorPod
		return &merged
	case w.Type == Sync && old.Type != Sync:
		// Keep the stronger reason, with the newest pod.
		merged := *old
		merged.Pod = w.Pod
		merged.MirrorPod = w.MirrorPod
		return &merged
	}
	return w
}

// Has reports whether the pod has a worker.
func (ws *Workers) Has(uid types.UID) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	_, ok := ws.workers[uid]
	return ok
}

// Wait blocks until every worker goroutine has returned (after ctx is done).
func (ws *Workers) Wait() { ws.wg.Wait() }

func (ws *Workers) run(pw *podWorker) {
	defer ws.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	backoff := ws.opts.ErrorBackoff
	// periodic: the timer is armed for the plain resync, not a retry.
	periodic := false

	for {
		select {
		case <-ws.ctx.Done():
			return
		case <-pw.wake:
		case <-timer.C:
			ws.requeueLast(pw, periodic)
		}

		ws.mu.Lock()
		w := pw.pending
		pw.pending = nil
		if w != nil && w.Type != Kill && pw.killed {
			if w.Type == Create {
				pw.killed = false
			} else {
				// A killed pod stays down until it is created again.
				pw.last = w
				w = nil
			}
		}
		ctx, cancel := context.WithCancel(ws.ctx)
		if w != nil && w.Type != Kill {
			pw.cancel = cancel
		}
		ws.mu.Unlock()
		if w == nil {
			cancel()
			continue
		}

		res := ws.sync(ctx, *w)
		ws.mu.Lock()
		pw.cancel = nil
		ws.mu.Unlock()
		cancel()
		if ws.ctx.Err() != nil {
			return
		}
		if res.Skipped {
			continue
		}

		ws.mu.Lock()
		pw.last = w
		if w.Type == Kill && res.Err == nil {
			pw.killed = true
			if w.Forget && (pw.pending == nil || pw.pending.Type != Create) {
				delete(ws.workers, pw.uid)
				ws.mu.Unlock()
				if ws.opts.OnForgotten != nil {
					ws.opts.OnForgotten(pw.uid)
				}
				return
			}
		}
		ws.mu.Unlock()

		var next time.Duration
		periodic = false
		switch {
		case res.Err != nil:
			next = backoff
			backoff = min(2*backoff, ws.opts.ResyncPeriod)
		case res.RetryAfter > 0:
			backoff = ws.opts.ErrorBackoff
			next = min(res.RetryAfter, ws.jittered())
		default:
			backoff = ws.opts.ErrorBackoff
			next = ws.jittered()
			periodic = true
		}
		timer.Reset(next)
	}
}

// requeueLast turns a timer tick into a resync of the last known pod, unless
// newer work is already waiting; periodic: the tick is the plain resync
// (Work.Periodic), not a retry.
func (ws *Workers) requeueLast(pw *podWorker, periodic bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if pw.pending != nil || pw.last == nil {
		return
	}
	w := *pw.last
	if w.Type != Kill {
		w.Type = Sync
	}
	w.Relisted = nil // a periodic resync is never skipped as a relist
	w.Periodic = periodic
	pw.pending = &w
}

// jittered spreads resyncs so that pods created together do not all sync in
// the same instant forever after.
func (ws *Workers) jittered() time.Duration {
	p := ws.opts.ResyncPeriod
	return p + time.Duration(rand.Int64N(int64(p)/10+1))
}
