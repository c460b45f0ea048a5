package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/prober"
	"github.com/nodelet/nodelet/pkg/runtime"
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
