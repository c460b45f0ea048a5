package cgroups

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/status"
)

// OOM score adjustments by QoS class, as upstream: the kernel kills the
// process with the highest score (usage share + adjustment) first, so
// BestEffort containers go first, Guaranteed ones (and node-critical pods)
// last; nodelet itself would run at -999.
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
)

// systemNodeCritical is the priority class of pods the node cannot do
// without.
const systemNodeCritical = "system-node-critical"

// OOMScoreAdj is the oom_score_adj of container c of pod on a node with
// memoryCapacity bytes: -997 for Guaranteed and node-critical pods, 1000
// for BestEffort, and for Burstable 1000 less the container's share of the
// node's memory in permille (its request; a sidecar is scored like the
// smallest regular container when that is lower), kept within [3, 999]
// so a Burstable container always ranks between the two. Extra memory a
// pod requests at pod level beyond its containers' requests is shared
// equally among them. An unknown capacity (0) scores Burstable containers
// 999.
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int64 {
	if isNodeCritical(pod) {
		return GuaranteedOOMScoreAdj
	}
	switch status.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return BestEffortOOMScoreAdj - 1
	}
	extra := podLevelExtraMemory(pod)
	score := func(req int64) int64 { return 1000 - 1000*(req+extra)/memoryCapacity }
	adj := score(c.Resources.Requests.Memory().Value())
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		smallest := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := range pod.Spec.Containers[1:] {
			smallest = min(smallest, pod.Spec.Containers[i+1].Resources.Requests.Memory().Value())
		}
		adj = min(adj, score(smallest))
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj == BestEffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

// podLevelExtraMemory is the memory a pod requests at pod level beyond its
// containers' requests, per container.
func podLevelExtraMemory(pod *v1.Pod) int64 {
	if !resourcehelper.IsPodLevelRequestsSet(pod) || pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if n == 0 {
		return 0
	}
	containers := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	extra := pod.Spec.Resources.Requests.Memory().Value() - containers.Memory().Value()
	return max(extra, 0) / n
}

func isSidecar(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// isNodeCritical: a critical pod (static, mirror, or of system priority)
// of the system-node-critical class, as upstream.
func isNodeCritical(pod *v1.Pod) bool {
	if pod.Spec.PriorityClassName != systemNodeCritical {
		return false
	}
	return podutil.IsCritical(pod)
}
