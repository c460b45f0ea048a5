// Package pleg notices runtime changes that nodelet did not cause itself - a
// container exiting, a sandbox dying, something removed by hand - by
// relisting the runtime periodically and diffing each listing against the
// last. It reports the UIDs of pods that changed so that only their workers
// wake up, and keeps the latest listing for housekeeping.
package pleg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// Lister lists every pod the runtime has (two CRI calls: sandboxes and
// containers).
type Lister interface {
	ListPods(ctx context.Context) ([]*runtime.Pod, error)
}

// Change reports one pod whose runtime state differs from the previous
// listing.
type Change struct {
	UID types.UID
	// Fingerprint of the pod in the listing that noticed the change ("" when
	// the pod vanished); compare with StatusFingerprint of a pod status.
	Fingerprint string
	// ListedAt is when that listing had completed: the runtime state it
	// shows is no newer than this.
	ListedAt time.Time
}

// Metrics records relists (metrics.PLEG: upstream's
// kubelet_pleg_relist_duration_seconds and _interval_seconds).
type Metrics interface {
	// ObserveRelist records one relist that began at began and took d;
	// interval is the time since the previous relist began (0 for the
	// first). ok: the runtime answered.
	ObserveRelist(began time.Time, d, interval time.Duration, ok bool)
}

// Relister relists the runtime every period.
type Relister struct {
	lister  Lister
	period  time.Duration
	changed chan Change
	metrics Metrics
	// prevBegan is when the previous relist began; only Run's goroutine
	// touches it.
	prevBegan time.Time

	mu       sync.Mutex
	snapshot []*runtime.Pod
	// listed holds the UIDs of snapshot, fingerprints their fingerprints;
	// snapshotBegan is when the listing that made it began.
	listed        map[types.UID]bool
	fingerprints  map[types.UID]string
	snapshotBegan time.Time
	lastRelist    time.Time
	lastErr       error
}

// New returns a Relister; Run starts it. m may be nil.
func New(lister Lister, period time.Duration, m Metrics) *Relister {
	return &Relister{lister: lister, period: period, changed: make(chan Change, 1024), metrics: m}
}

// Changed delivers every pod whose runtime state changed.
func (r *Relister) Changed() <-chan Change { return r.changed }

// Run relists until ctx is done.
func (r *Relister) Run(ctx context.Context) error {
	var last listing
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) { last = r.relist(ctx, last) }, r.period)
	return nil
}

// listing is what one relist saw: its pods and their fingerprints.
type listing struct {
	pods []*runtime.Pod
	// fingerprints by pod UID, and by the *runtime.Pod they were taken of.
	byUID map[types.UID]string
	byPod map[*runtime.Pod]string
	// listed holds the UIDs of pods.
	listed map[types.UID]bool
}

func (r *Relister) relist(ctx context.Context, last listing) listing {
	began := time.Now()
	lctx, cancel := context.WithTimeout(ctx, r.period*10+5*time.Second)
	pods, err := r.lister.ListPods(lctx)
	cancel()
	listedAt := time.Now()
	if r.metrics != nil {
		// As upstream, the interval runs from one relist's start to the
		// next, and the duration is the listing's.
		var interval time.Duration
		if !r.prevBegan.IsZero() {
			interval = began.Sub(r.prevBegan)
		}
		r.metrics.ObserveRelist(began, listedAt.Sub(began), interval, err == nil)
	}
	r.prevBegan = began
	if err != nil {
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		klog.ErrorS(err, "Relist runtime")
		return last
	}
	// The same pods as last time (cristatus.PodsCache on an unchanged
	// node): nothing to fingerprint or compare.
	same := last.byUID != nil && slices.Equal(pods, last.pods)
	cur := last
	if !same {
		cur = newListing(pods, last)
	}
	r.mu.Lock()
	r.lastErr = nil
	r.snapshot, r.listed, r.fingerprints, r.snapshotBegan = pods, cur.listed, cur.byUID, began
	r.lastRelist = listedAt
	r.mu.Unlock()
	if same {
		return cur
	}
	for _, uid := range Diff(last.byUID, cur.byUID) {
		select {
		case r.changed <- Change{UID: uid, Fingerprint: cur.byUID[uid], ListedAt: listedAt}:
		case <-ctx.Done():
			return cur
		}
	}
	return cur
}

// newListing fingerprints pods. A lister that hands out the same
// *runtime.Pod for a pod that did not change (cristatus.PodsCache) gets its
// fingerprint from the last listing: on an idle node nothing is computed.
func newListing(pods []*runtime.Pod, last listing) listing {
	l := listing{
		pods:   pods,
		byUID:  make(map[types.UID]string, len(pods)),
		byPod:  make(map[*runtime.Pod]string, len(pods)),
		listed: make(map[types.UID]bool, len(pods)),
	}
	for _, p := range pods {
		fp, ok := last.byPod[p]
		if !ok {
			fp = Fingerprint(p)
		}
		l.byUID[p.UID], l.byPod[p], l.listed[p.UID] = fp, fp, true
	}
	return l
}

// Diff returns the UIDs whose fingerprint differs between two listings,
// including pods that appeared or vanished.
func Diff(old, cur map[types.UID]string) []types.UID {
	var out []types.UID
	for uid, fp := range cur {
		if old[uid] != fp {
			out = append(out, uid)
		}
	}
	for uid := range old {
		if _, ok := cur[uid]; !ok {
			out = append(out, uid)
		}
	}
	return out
}

// Fingerprint captures what a worker must react to: which instances exist
// and in what state. Listing order does not matter because the CRI lists in
// a stable order per runtime (and cri sorts newest first), and a reorder
// only costs one spurious sync.
func Fingerprint(p *runtime.Pod) string {
	var b strings.Builder
	for _, sb := range p.Sandboxes {
		writeInstance(&b, "s:", sb.ID, string(sb.State))
	}
	for _, c := range p.Containers {
		writeInstance(&b, "c:", c.ID, string(c.State))
	}
	return b.String()
}

// StatusFingerprint is Fingerprint of what a pod status read shows, so a
// worker's own read can be compared with a listing.
func StatusFingerprint(s *runtime.PodStatus) string {
	var b strings.Builder
	for _, sb := range s.Sandboxes {
		writeInstance(&b, "s:", sb.ID, string(sb.State))
	}
	for _, c := range s.Containers {
		writeInstance(&b, "c:", c.ID, string(c.State))
	}
	return b.String()
}

func writeInstance(b *strings.Builder, kind, id, state string) {
	b.WriteString(kind)
	b.WriteString(id)
	b.WriteByte('=')
	b.WriteString(state)
	b.WriteByte(';')
}

// Snapshot returns the latest successful listing.
func (r *Relister) Snapshot() []*runtime.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot
}

// ListedSince reports whether the latest listing began after t.
func (r *Relister) ListedSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed != nil && r.snapshotBegan.After(t)
}

// Listed returns the pod's Fingerprint in the latest listing and when that
// listing began; ok is false when there is no listing yet or it did not
// show the pod.
func (r *Relister) Listed(uid types.UID) (fingerprint string, began time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fingerprint, ok = r.fingerprints[uid]
	return fingerprint, r.snapshotBegan, ok
}

// Absent reports whether the latest listing began after since and showed
// nothing of uid: then nothing of the pod existed when it began, and whoever
// last acted on the pod before since created nothing that listing missed.
// False when there is no listing yet.
func (r *Relister) Absent(uid types.UID, since time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed != nil && r.snapshotBegan.After(since) && !r.listed[uid]
}

// Healthy reports an error when the runtime has not been listed successfully
// for a while: a hung runtime, not a slow pod.
func (r *Relister) Healthy() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	threshold := 3 * time.Minute
	if r.lastRelist.IsZero() {
		if r.lastErr != nil {
			return fmt.Errorf("runtime never listed: %w", r.lastErr)
		}
		return nil
	}
	if age := time.Since(r.lastRelist); age > threshold {
		return fmt.Errorf("runtime last listed %s ago (threshold %s): %v", age.Round(time.Second), threshold, r.lastErr)
	}
	return nil
}
