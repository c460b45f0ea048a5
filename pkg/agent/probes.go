package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/prober"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/worker"
)

// Prober runs the containers' probes (prober.Manager).
type Prober interface {
	// Observe tells what runs of a pod after each of its syncs: probes
	// start and stop with the container instances.
	Observe(pod *v1.Pod, rs *runtime.PodStatus, podIP string)
	// View is what the probes found of a pod's containers.
	View(uid types.UID) prober.View
	// Remove stops the probes of a pod that left the node.
	Remove(uid types.UID)
}

// SetProber makes the agent run probes. Call before Run.
func (a *Agent) SetProber(p Prober) { a.prober = p }

// ProbeChanged wakes the pod's worker after a probe result changed what
// its containers are (ready, started, failed): the worker restarts a
// container that failed and publishes the new status, so a readiness
// change reaches the API within a sync. Safe from any goroutine once Run
// has started.
func (a *Agent) ProbeChanged(uid types.UID) {
	p, ok := a.pods.PodByUID(uid)
	if !ok || a.workers == nil {
		return
	}
	a.workers.Update(worker.Work{Pod: p, MirrorPod: a.mirrorOf(p), Type: worker.Sync})
}
