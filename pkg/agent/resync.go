package agent

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/worker"
)

// Resync has the worker of a known pod sync it now, whatever back-off it
// is in: something it waited for outside the runtime (a config map, a
// secret) is there now. Unknown pods are ignored.
func (a *Agent) Resync(uid types.UID) {
	if p, ok := a.pods.PodByUID(uid); ok {
		a.dispatch(p, worker.Sync)
	}
}
