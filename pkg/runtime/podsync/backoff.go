package podsync

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
)

// crashBackoff is the crash-loop back-off per container (pod UID + name).
// The first restart after an exit is immediate; each following one waits
// twice as long as the last, up to the maximum. A container that ran for
// more than twice the maximum before exiting starts over at the initial
// delay (flowcontrol's expiry rule, measured from the last restart).
type crashBackoff struct {
	b *flowcontrol.Backoff
}

func crashKey(uid types.UID, name string) string { return string(uid) + "/" + name }

// Remaining implements plan.BackoffView.
func (c crashBackoff) Remaining(uid types.UID, name string, finishedAt, now time.Time) time.Duration {
	key := crashKey(uid, name)
	if !c.b.IsInBackOffSince(key, finishedAt) {
		return 0
	}
	return max(finishedAt.Add(c.b.Get(key)).Sub(now), 0)
}

// restarted records a restart of a container that exited at finishedAt.
func (c crashBackoff) restarted(uid types.UID, name string, finishedAt time.Time) {
	c.b.Next(crashKey(uid, name), finishedAt)
}

// period is the current back-off period of a container.
func (c crashBackoff) period(uid types.UID, name string) time.Duration {
	return c.b.Get(crashKey(uid, name))
}

func (c crashBackoff) forget(uid types.UID, name string) {
	c.b.DeleteEntry(crashKey(uid, name))
}
