package agent

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/worker"
)

// observation is what a pod's worker last read from the runtime, right after
// its sync acted.
type observation struct {
	// fingerprint of that read (pleg.StatusFingerprint).
	fingerprint string
	// at is when the read began: it shows every change made before then.
	at time.Time
	// inSync: the read needed no action (the pod's plan was idle, or only
	// repeated the stop of a finished pod), so syncing the same state
	// again would do nothing.
	inSync bool
	// stopped is the newest sandbox of the pod when this process last
	// stopped the whole pod and nothing was started since ("": none), so
	// that a finished pod is not stopped again at every sync.
	stopped string
}

// observations holds the latest observation per pod UID, and when this
// process last finished acting on each pod; workers write their own pod's
// entries, so the lock is only for the maps.
type observations struct {
	mu      sync.Mutex
	m       map[types.UID]observation
	actedAt map[types.UID]time.Time
}

// acted records that a sync of uid just ended.
func (o *observations) acted(uid types.UID, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.actedAt == nil {
		o.actedAt = map[types.UID]time.Time{}
	}
	o.actedAt[uid] = at
}

// lastActed returns when a sync of uid last ended (zero: never).
func (o *observations) lastActed(uid types.UID) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.actedAt[uid]
}

// pruneActed forgets the times that no longer matter: drop(uid, t) says
// whether a listing began after t (and the pod is not wanted), so the
// listings themselves account for what that sync did.
func (o *observations) pruneActed(drop func(uid types.UID, t time.Time) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for uid, t := range o.actedAt {
		if drop(uid, t) {
			delete(o.actedAt, uid)
		}
	}
}

func (o *observations) get(uid types.UID) (observation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	obs, ok := o.m[uid]
	return obs, ok
}

func (o *observations) set(uid types.UID, obs observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[types.UID]observation{}
	}
	o.m[uid] = obs
}

func (o *observations) delete(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, uid)
}

// skipRelisted decides whether a sync the relister alone asked for (r) can
// be skipped given the worker's last observation of the pod. It can when
// that observation needed no action and the listing brings nothing newer:
// either it shows exactly the observed state (typically the containers the
// worker just started, seen by the next relist), or it had completed before
// the observation began (a listing taken mid-sync, whose changes the
// observation already includes). Anything else - a container that exited, a
// sandbox that died, a pod whose last sync left work - is synced at once.
func skipRelisted(r *worker.Relisted, obs observation, known bool) bool {
	if r == nil || !known || !obs.inSync {
		return false
	}
	return r.Fingerprint == obs.fingerprint || r.At.Before(obs.at)
}

// listedState is what the relister's latest listing showed of a pod.
type listedState struct {
	fingerprint string
	// began is when that listing began.
	began time.Time
	// ok: the listing showed the pod.
	ok bool
}

// skipPeriodic decides whether a periodic resync (worker.Work.Periodic) can
// be skipped: the worker's last read needed no action, and a listing begun
// after that read shows the pod exactly as read. The relister lists every
// second and wakes the worker on any change of the pod's sandboxes or
// containers, so re-reading, re-planning and re-publishing an unchanged pod
// each minute would find what the last sync found. What is not in the
// runtime state comes by its own way: spec changes and deletions as
// updates, probe results and volume refreshes as wake-ups, back-offs and
// deadlines as retries (never periodic).
func skipPeriodic(obs observation, known bool, l listedState) bool {
	return known && obs.inSync && l.ok && l.began.After(obs.at) && l.fingerprint == obs.fingerprint
}
