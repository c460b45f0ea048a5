package status

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as upstream's.
const (
	reasonContainersNotReady     = "ContainersNotReady"
	reasonReadinessGatesNotReady = "ReadinessGatesNotReady"
	reasonPodCompleted           = "PodCompleted"
	reasonPodFailed              = "PodFailed"
)

// readiness is the value of a ready condition before transition times.
type readiness struct {
	ok              bool
	reason, message string
}

func (r readiness) condition(t v1.PodConditionType, prev *v1.PodStatus, now metav1.Time) v1.PodCondition {
	c := condition(t, r.ok, r.reason, prev, now)
	c.Message = r.message
	return c
}

// containersReadiness: every app container and every sidecar (restartable
// init container) is ready. A pod in a terminal phase is not, with the
// phase as the reason.
func containersReadiness(pod *v1.Pod, s v1.PodStatus) readiness {
	switch s.Phase {
	case v1.PodSucceeded:
		return readiness{reason: reasonPodCompleted}
	case v1.PodFailed:
		return readiness{reason: reasonPodFailed}
	}
	var unknown, unready []string
	check := func(name string, list []v1.ContainerStatus) {
		for _, st := range list {
			if st.Name == name {
				if !st.Ready {
					unready = append(unready, name)
				}
				return
			}
		}
		unknown = append(unknown, name)
	}
	for _, c := range pod.Spec.InitContainers {
		if isRestartableInit(c) {
			check(c.Name, s.InitContainerStatuses)
		}
	}
	for _, c := range pod.Spec.Containers {
		check(c.Name, s.ContainerStatuses)
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: %s", unready))
	}
	if len(msgs) > 0 {
		return readiness{reason: reasonContainersNotReady, message: strings.Join(msgs, ", ")}
	}
	return readiness{ok: true}
}

// podReadiness: the containers are ready and so is every readiness gate,
// whose condition someone else (a controller) sets on the pod in the API.
func podReadiness(pod *v1.Pod, containers readiness) readiness {
	if !containers.ok {
		return containers
	}
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		c := findCondition(pod.Status.Conditions, g.ConditionType)
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
		}
	}
	if len(msgs) > 0 {
		return readiness{reason: reasonReadinessGatesNotReady, message: strings.Join(msgs, ", ")}
	}
	return readiness{ok: true}
}

func findCondition(cs []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// ReadinessGatesChanged reports whether the pod's readiness gates, as the
// API now has the pod's conditions, say something other than its Ready
// condition: the pod's status needs regenerating (upstream's
// NeedToReconcilePodReadiness).
func ReadinessGatesChanged(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cr := findCondition(pod.Status.Conditions, v1.ContainersReady)
	containers := readiness{ok: cr != nil && cr.Status == v1.ConditionTrue}
	want := podReadiness(pod, containers)
	ready := findCondition(pod.Status.Conditions, v1.PodReady)
	return ready == nil || (ready.Status == v1.ConditionTrue) != want.ok
}
