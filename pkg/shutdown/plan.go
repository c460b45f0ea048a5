package shutdown

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	podutil "github.com/nodelet/nodelet/pkg/pod"
)

// CriticalPriority is the lower bound of the system-cluster-critical and
// system-node-critical priority classes: pods at or above it are stopped
// last.
const CriticalPriority = podutil.SystemCriticalPriority

// What a pod stopped for a node shutdown shows in its status, as upstream.
const (
	Reason  = "Terminated"
	Message = "Pod was terminated in response to imminent node shutdown."
)

// Group is the pods stopped together, with the time they get: all pods
// with priority at or above MinPriority and below the next group's.
type Group struct {
	MinPriority int32
	Grace       time.Duration
	Pods        []*v1.Pod
}

// Groups splits the grace period between regular pods (grace - critical)
// and critical pods (critical), lowest priority first: the order in which
// they are stopped. A zero grace period is no graceful shutdown (nil).
func Groups(grace, critical time.Duration) ([]Group, error) {
	switch {
	case grace < 0 || critical < 0:
		return nil, fmt.Errorf("shutdownGracePeriod (%v) and shutdownGracePeriodCriticalPods (%v) must not be negative", grace, critical)
	case critical > grace:
		return nil, fmt.Errorf("shutdownGracePeriodCriticalPods (%v) must not exceed shutdownGracePeriod (%v)", critical, grace)
	case grace == 0:
		return nil, nil
	}
	return []Group{
		{MinPriority: 0, Grace: grace - critical},
		{MinPriority: CriticalPriority, Grace: critical},
	}, nil
}

// Assign puts each pod into the group its priority falls in and returns
// the groups (copies, lowest priority first). A pod below the lowest
// group's priority (negative priorities) goes to the lowest group.
func Assign(groups []Group, pods []*v1.Pod) []Group {
	out := make([]Group, len(groups))
	copy(out, groups)
	for i := range out {
		out[i].Pods = nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].MinPriority < out[j].MinPriority })
	if len(out) == 0 {
		return out
	}
	for _, p := range pods {
		var prio int32
		if p.Spec.Priority != nil {
			prio = *p.Spec.Priority
		}
		idx := 0
		for i := range out {
			if prio >= out[i].MinPriority {
				idx = i
			}
		}
		out[idx].Pods = append(out[idx].Pods, p)
	}
	return out
}

// PodGrace is the grace period a pod of a group is stopped with, in
// seconds: its own terminationGracePeriodSeconds when that is shorter
// than what the group has, otherwise the group's.
func PodGrace(p *v1.Pod, group time.Duration) int64 {
	g := int64(group / time.Second)
	if own := p.Spec.TerminationGracePeriodSeconds; own != nil && *own <= g {
		return max(*own, 0)
	}
	return g
}

// MarkTerminated sets the status of a pod stopped for a node shutdown as
// upstream does: phase Failed (unless it already Succeeded), reason
// Terminated, and a DisruptionTarget condition.
func MarkTerminated(st *v1.PodStatus, now time.Time) {
	if st.Phase != v1.PodSucceeded {
		st.Phase = v1.PodFailed
	}
	st.Reason = Reason
	st.Message = Message
	cond := v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonTerminationByKubelet, Message: Message,
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.DisruptionTarget {
			if st.Conditions[i].Status != v1.ConditionTrue {
				cond.LastTransitionTime.Time = now
			} else {
				cond.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = cond
			return
		}
	}
	cond.LastTransitionTime.Time = now
	st.Conditions = append(st.Conditions, cond)
}
