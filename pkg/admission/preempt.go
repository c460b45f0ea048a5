package admission

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/status"
)

// Preemption of running pods to admit a critical one, as upstream's
// kubelet does: when a critical pod does not fit only for want of
// resources, the fewest lower-priority pods that free enough are stopped,
// BestEffort first, then Burstable, then Guaranteed.

// What a preempted pod's status says, as upstream.
const (
	ReasonPreempting           = "Preempting"
	MessagePreempted           = "Preempted in order to admit critical pod"
	ReasonTerminationByKubelet = "TerminationByKubelet"
	MessageDisruption          = "Pod was preempted by Kubelet to accommodate a critical pod."
)

// preemptable reports whether preemptor may preempt preemptee: a critical
// pod any non-critical one, else a pod of higher priority, as upstream.
func preemptable(preemptor, preemptee *v1.Pod) bool {
	if podutil.IsCritical(preemptor) && !podutil.IsCritical(preemptee) {
		return true
	}
	return preemptor.Spec.Priority != nil && preemptee.Spec.Priority != nil && *preemptor.Spec.Priority > *preemptee.Spec.Priority
}

// IsResourceReason reports whether a refusal is for want of resources
// (OutOfcpu, OutOfmemory, OutOfpods, ...): the only refusals preemption
// can cure.
func IsResourceReason(reason string) bool { return strings.HasPrefix(reason, ReasonOutOfPrefix) }

// Requirement is how much of a resource must be freed for a pod to fit:
// millicores for CPU, a count for pods, the plain value for the rest.
type Requirement struct {
	Name     v1.ResourceName
	Quantity int64
}

// Shortfall is what p lacks to fit beside active on allocatable: for each
// resource it requests more of than is left, the difference; the pod
// count when the node is full.
func Shortfall(p *v1.Pod, active []*v1.Pod, allocatable v1.ResourceList) []Requirement {
	var out []Requirement
	if maxPods, ok := allocatable[v1.ResourcePods]; ok && int64(len(active))+1 > maxPods.Value() {
		out = append(out, Requirement{v1.ResourcePods, int64(len(active)) + 1 - maxPods.Value()})
	}
	want := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	for _, name := range slices.Sorted(func(yield func(v1.ResourceName) bool) {
		for n := range want {
			if !yield(n) {
				return
			}
		}
	}) {
		req := value(name, want[name])
		if req <= 0 || name == v1.ResourcePods {
			continue
		}
		capQ, known := allocatable[name]
		if !known && name != v1.ResourceCPU && name != v1.ResourceMemory && name != v1.ResourceEphemeralStorage {
			continue
		}
		var used int64
		for _, o := range active {
			used += request(o, name)
		}
		capacity := int64(0)
		if known {
			capacity = value(name, capQ)
		}
		if need := req - (capacity - used); need > 0 {
			out = append(out, Requirement{name, need})
		}
	}
	return out
}

// request is p's request of name in Requirement units; 1 for pods.
func request(p *v1.Pod, name v1.ResourceName) int64 {
	if name == v1.ResourcePods {
		return 1
	}
	q, ok := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[name]
	if !ok {
		return 0
	}
	return value(name, q)
}

type requirements []Requirement

// subtract is what is still needed once pods are gone.
func (rs requirements) subtract(pods ...*v1.Pod) requirements {
	var out requirements
	for _, r := range rs {
		left := r.Quantity
		for _, p := range pods {
			left -= request(p, r.Name)
		}
		if left > 0 {
			out = append(out, Requirement{r.Name, left})
		}
	}
	return out
}

// distance is how far freeing p leaves the requirements from met: the sum
// of the squared unmet share of each; 0 when p alone meets them all.
func (rs requirements) distance(p *v1.Pod) float64 {
	var d float64
	for _, r := range rs {
		if left := float64(r.Quantity - request(p, r.Name)); left > 0 {
			d += math.Pow(left/float64(r.Quantity), 2)
		}
	}
	return d
}

func (rs requirements) String() string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%s: %d", r.Name, r.Quantity))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Preemptees chooses the pods of active to stop so that preemptor fits,
// as upstream: only pods preemptor may preempt; Guaranteed pods only as
// far as evicting every Burstable and BestEffort one would not do, then
// Burstable pods as far as the BestEffort ones would not, then BestEffort
// ones; within a class, repeatedly the pod nearest to meeting what is
// still needed (ties: the smaller memory, then CPU request). An error
// says when no set of pods frees enough.
func Preemptees(preemptor *v1.Pod, active []*v1.Pod, need []Requirement) ([]*v1.Pod, error) {
	var bestEffort, burstable, guaranteed []*v1.Pod
	for _, p := range active {
		if !preemptable(preemptor, p) {
			continue
		}
		switch status.QOSClass(p) {
		case v1.PodQOSBestEffort:
			bestEffort = append(bestEffort, p)
		case v1.PodQOSBurstable:
			burstable = append(burstable, p)
		default:
			guaranteed = append(guaranteed, p)
		}
	}
	rs := requirements(need)
	if left := rs.subtract(slices.Concat(bestEffort, burstable, guaranteed)...); len(left) > 0 {
		return nil, fmt.Errorf("no set of running pods found to reclaim resources: %s", left)
	}
	g, err := byDistance(guaranteed, rs.subtract(slices.Concat(bestEffort, burstable)...))
	if err != nil {
		return nil, err
	}
	b, err := byDistance(burstable, rs.subtract(slices.Concat(bestEffort, g)...))
	if err != nil {
		return nil, err
	}
	be, err := byDistance(bestEffort, rs.subtract(slices.Concat(b, g)...))
	if err != nil {
		return nil, err
	}
	return slices.Concat(be, b, g), nil
}

func byDistance(pods []*v1.Pod, rs requirements) ([]*v1.Pod, error) {
	pods = slices.Clone(pods)
	var out []*v1.Pod
	for len(rs) > 0 {
		if len(pods) == 0 {
			return nil, fmt.Errorf("no set of running pods found to reclaim resources: %s", rs)
		}
		best, bestDist := 0, math.Inf(1)
		for i, p := range pods {
			d := rs.distance(p)
			if d < bestDist || (d == bestDist && smallerRequest(p, pods[best])) {
				best, bestDist = i, d
			}
		}
		rs = rs.subtract(pods[best])
		out = append(out, pods[best])
		pods = slices.Delete(pods, best, best+1)
	}
	return out, nil
}

// smallerRequest: a asks for less memory than b, or as much and less CPU.
func smallerRequest(a, b *v1.Pod) bool {
	for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		ra, rb := request(a, name), request(b, name)
		if ra != rb {
			return ra < rb
		}
	}
	return false
}

// MarkPreempted sets the status of a preempted pod as upstream: phase
// Failed, reason Preempting, and a DisruptionTarget condition.
func MarkPreempted(st *v1.PodStatus, now time.Time) {
	st.Phase = v1.PodFailed
	st.Reason = ReasonPreempting
	st.Message = MessagePreempted
	cond := v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: ReasonTerminationByKubelet, Message: MessageDisruption,
		LastTransitionTime: metav1.NewTime(now),
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.DisruptionTarget {
			if st.Conditions[i].Status == v1.ConditionTrue {
				cond.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
