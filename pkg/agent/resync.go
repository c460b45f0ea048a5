package agent

import (
	"github.com/nodelet/nodelet/pkg/worker"
)

// handleWakeups runs the requests other goroutines left in Wakeups. Sync
// loop goroutine only. Unknown pods are ignored.
func (a *Agent) handleWakeups() {
	resyncs, probes := a.wakeups.take()
	for _, uid := range resyncs {
		if p, ok := a.pods.PodByUID(uid); ok {
			a.dispatch(p, worker.Sync)
		}
	}
	for _, uid := range probes {
		// The worker restarts a container that failed and publishes the new
		// status, so a readiness change reaches the API within a sync.
		if p, ok := a.pods.PodByUID(uid); ok && !a.rejected.Has(uid) {
			a.workers.Update(worker.Work{Pod: p, MirrorPod: a.mirrorOf(p), Type: worker.Sync})
		}
	}
}
