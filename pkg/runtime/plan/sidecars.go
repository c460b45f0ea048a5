package plan

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// keepSidecars keeps the restartable init containers (sidecars) running
// once initialization is over and the app containers run: one that exited
// is restarted, with back-off, whatever the pod's restart policy; one
// whose liveness or startup probe failed is restarted.
func (p *planner) keepSidecars() {
	for i := range p.pod.Spec.InitContainers {
		c := &p.pod.Spec.InitContainers[i]
		if !isSidecar(c) {
			continue
		}
		cs := p.status.LatestContainer(c.Name)
		switch {
		case cs == nil:
			p.start(c, true, "restartable init container is not running")
		case cs.State == runtime.ContainerStateRunning && cs.SandboxID != p.a.SandboxID:
			p.replace(c, cs)
		case cs.State == runtime.ContainerStateRunning && specChanged(p.pod, c, cs):
			// As upstream: a running sidecar whose definition changed (its
			// image, the one field of it the API lets change) restarts.
			p.kill(cs, "container spec changed")
			p.start(c, true, "container spec changed")
		case cs.State == runtime.ContainerStateRunning:
			if p.unhealthy(cs) != "" {
				p.restartUnhealthy(c, true, cs)
			}
		case cs.State == runtime.ContainerStateExited:
			p.startAfterExit(c, true, cs)
		default:
			p.replace(c, cs)
		}
	}
}

// TerminationOrder splits the instances of a pod to stop into those that
// stop first, together (app and ordinary init containers, and anything the
// spec does not name), and the sidecars, which stop afterwards one at a
// time in reverse spec order. pod may be nil (an orphan): all stop at once.
func TerminationOrder(pod *v1.Pod, running []*runtime.ContainerStatus) (first, sidecarsLast []*runtime.ContainerStatus) {
	order := map[string]int{}
	if pod != nil {
		for i := range pod.Spec.InitContainers {
			if isSidecar(&pod.Spec.InitContainers[i]) {
				order[pod.Spec.InitContainers[i].Name] = i
			}
		}
	}
	for _, cs := range running {
		if _, ok := order[cs.Name]; ok {
			sidecarsLast = append(sidecarsLast, cs)
		} else {
			first = append(first, cs)
		}
	}
	// Stable, so several instances of one sidecar keep their order.
	slices.SortStableFunc(sidecarsLast, func(a, b *runtime.ContainerStatus) int { return order[b.Name] - order[a.Name] })
	return first, sidecarsLast
}
