// Package pleg notices runtime changes that nodelet did not cause itself - a
// container exiting, a sandbox dying, something removed by hand - by
// relisting the runtime periodically and diffing each listing against the
// last. It reports the UIDs of pods that changed so that only their workers
// wake up, and keeps the latest listing for housekeeping.
package pleg

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// Lister lists every pod the runtime has (two CRI calls: sandboxes and
// containers).
type Lister interface {
	ListPods(ctx context.Context) ([]*runtime.Pod, error)
}

// Relister relists the runtime every period.
type Relister struct {
	lister  Lister
	period  time.Duration
	changed chan types.UID

	mu         sync.Mutex
	snapshot   []*runtime.Pod
	lastRelist time.Time
	lastErr    error
}

// New returns a Relister; Run starts it.
func New(lister Lister, period time.Duration) *Relister {
	return &Relister{lister: lister, period: period, changed: make(chan types.UID, 1024)}
}

// Changed delivers the UID of every pod whose runtime state changed.
func (r *Relister) Changed() <-chan types.UID { return r.changed }

// Run relists until ctx is done.
func (r *Relister) Run(ctx context.Context) {
	last := map[types.UID]string{}
	t := time.NewTicker(r.period)
	defer t.Stop()
	for {
		last = r.relist(ctx, last)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Relister) relist(ctx context.Context, last map[types.UID]string) map[types.UID]string {
	lctx, cancel := context.WithTimeout(ctx, r.period*10+5*time.Second)
	pods, err := r.lister.ListPods(lctx)
	cancel()
	r.mu.Lock()
	r.lastErr = err
	if err == nil {
		r.snapshot = pods
		r.lastRelist = time.Now()
	}
	r.mu.Unlock()
	if err != nil {
		klog.ErrorS(err, "Relist runtime")
		return last
	}
	cur := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		cur[p.UID] = fingerprint(p)
	}
	for _, uid := range Diff(last, cur) {
		select {
		case r.changed <- uid:
		case <-ctx.Done():
			return cur
		}
	}
	return cur
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

// fingerprint captures what a worker must react to: which instances exist
// and in what state. Listing order does not matter because the CRI lists in
// a stable order per runtime, and a reorder only costs one spurious sync.
func fingerprint(p *runtime.Pod) string {
	s := ""
	for _, sb := range p.Sandboxes {
		s += fmt.Sprintf("s:%s=%s;", sb.ID, sb.State)
	}
	for _, c := range p.Containers {
		s += fmt.Sprintf("c:%s=%s;", c.ID, c.State)
	}
	return s
}

// Snapshot returns the latest successful listing.
func (r *Relister) Snapshot() []*runtime.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot
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
