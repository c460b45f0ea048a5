package status

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reason and message of a pod failed for running past its
// activeDeadlineSeconds, as upstream reports them.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// maxPodTerminationMessages is what all termination messages of a pod may
// take in its status together (upstream's 12 KiB), shared evenly.
const maxPodTerminationMessages = 12 << 10

// ActiveDeadline applies pod's activeDeadlineSeconds, counted from start
// (the pod's status start time; nil: not started, no deadline yet). It
// reports whether the deadline has passed at now and, when it has not, how
// long is left (0: no deadline).
func ActiveDeadline(pod *v1.Pod, start *metav1.Time, now time.Time) (exceeded bool, left time.Duration) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start == nil || start.IsZero() {
		return false, 0
	}
	left = start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// limitTerminationMessages cuts each termination message in s to its share
// of the pod's budget: 12 KiB over all init and app containers.
func limitTerminationMessages(pod *v1.Pod, s *v1.PodStatus) {
	share := maxPodTerminationMessages
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > 0 {
		share /= n
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			for _, t := range []*v1.ContainerStateTerminated{list[i].State.Terminated, list[i].LastTerminationState.Terminated} {
				if t != nil && len(t.Message) > share {
					t.Message = t.Message[:share]
				}
			}
		}
	}
}
