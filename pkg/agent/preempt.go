package agent

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/admission"
	"github.com/nodelet/nodelet/pkg/security"
)

// PreemptFunc chooses the pods of active to stop so that critical pod p
// fits (admission.Preemptees on the node's allocatable); an error when no
// set of them would do.
type PreemptFunc func(p *v1.Pod, active []*v1.Pod) ([]*v1.Pod, error)

// defaultGracePeriod is a pod's termination grace period when it sets none.
const defaultGracePeriod = 30

// preemptFor is admission's second chance for a critical pod refused for
// want of resources, as upstream: the chosen lower-priority pods are
// stopped (with their own grace period) and marked Failed, reason
// Preempting, and p is admitted. Nothing is stopped unless p then fits on
// every count; otherwise the first refusal stands. Sync loop goroutine
// only.
func (a *Agent) preemptFor(p *v1.Pod, active []*v1.Pod, refusal *security.Rejection) *security.Rejection {
	victims, err := a.preempt(p, active)
	if err != nil || len(victims) == 0 {
		klog.InfoS("Critical pod does not fit and preemption cannot help", "pod", klog.KObj(p), "reason", refusal.Reason, "err", err)
		return refusal
	}
	rest := slices.DeleteFunc(slices.Clone(active), func(o *v1.Pod) bool { return slices.Contains(victims, o) })
	if r := a.admit(p, rest); r != nil {
		klog.InfoS("Critical pod would not fit even after preemption", "pod", klog.KObj(p), "reason", r.Reason)
		return refusal
	}
	for _, v := range victims {
		klog.InfoS("Preempting pod to admit a critical pod", "pod", klog.KObj(v), "uid", v.UID, "criticalPod", klog.KObj(p))
		if a.recorder != nil {
			a.recorder.Eventf(v, v1.EventTypeWarning, admission.ReasonPreempting, "%s", admission.MessagePreempted)
		}
		grace := int64(defaultGracePeriod)
		if v.Spec.TerminationGracePeriodSeconds != nil {
			grace = *v.Spec.TerminationGracePeriodSeconds
		}
		a.shutdowns.add(v.UID, "preemption", grace, func(st *v1.PodStatus) { admission.MarkPreempted(st, time.Now()) })
		a.wakeups.Resync(v.UID)
	}
	return nil
}
