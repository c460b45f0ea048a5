package node

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Backoff bounds, as upstream's node status and lease loops: a blip is
// retried at once, an outage is polled every few seconds, never more rarely
// than the loop's own period.
const (
	backoffInitial = 100 * time.Millisecond
	backoffCap     = 7 * time.Second
)

// backoff is a capped exponential delay with jitter, reset on success.
type backoff struct {
	b, initial wait.Backoff
}

// newBackoff caps the delay at period when that is below backoffCap.
func newBackoff(period time.Duration) *backoff {
	b := wait.Backoff{Duration: backoffInitial, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: min(backoffCap, max(period, backoffInitial))}
	return &backoff{b: b, initial: b}
}

func (b *backoff) next() time.Duration { return b.b.Step() }
func (b *backoff) reset()              { b.b = b.initial }
