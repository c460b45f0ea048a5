package agent

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Wakeups carries requests to sync a pod now from goroutines outside the
// sync loop (the volume refresher, the probes) into it. The loop's state
// (which pods were refused, which worker runs) is its own; a request only
// names the pod, and the loop decides what to do about it when it reads the
// request. Requests for one pod coalesce until the loop takes them, so a
// burst never blocks the sender nor grows a queue.
//
// It exists before the agent and the components that send to it, which
// breaks the cycle between them (the prober wakes the agent, the agent
// drives the prober) without a closure over a variable assigned later.
type Wakeups struct {
	ready chan struct{} // capacity 1: "something is pending"

	mu      sync.Mutex
	resyncs sets.Set[types.UID] // guarded by mu
	probes  sets.Set[types.UID] // guarded by mu
}

// NewWakeups returns an empty set of requests.
func NewWakeups() *Wakeups {
	return &Wakeups{ready: make(chan struct{}, 1), resyncs: sets.New[types.UID](), probes: sets.New[types.UID]()}
}

// Resync asks for the pod to be synced now, whatever back-off its worker is
// in: something it waited for outside the runtime (a config map, a secret)
// is there now. Safe from any goroutine; never blocks.
func (w *Wakeups) Resync(uid types.UID) { w.add(func() { w.resyncs.Insert(uid) }) }

// ProbeChanged asks for the pod's worker to be woken after a probe result
// changed what its containers are (ready, started, failed). Safe from any
// goroutine; never blocks.
func (w *Wakeups) ProbeChanged(uid types.UID) { w.add(func() { w.probes.Insert(uid) }) }

func (w *Wakeups) add(insert func()) {
	w.mu.Lock()
	insert()
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default: // a signal is pending already; the loop takes everything at once
	}
}

// Ready is signalled when requests are pending.
func (w *Wakeups) Ready() <-chan struct{} { return w.ready }

// take returns the pending requests and forgets them.
func (w *Wakeups) take() (resyncs, probes []types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	resyncs, probes = sets.List(w.resyncs), sets.List(w.probes)
	w.resyncs.Clear()
	w.probes.Clear()
	return resyncs, probes
}
