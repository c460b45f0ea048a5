package status

import (
	v1 "k8s.io/api/core/v1"
)

// QOSClass classifies a pod as the API server does: Guaranteed when every
// container sets equal CPU and memory limits and requests, BestEffort when
// none sets any, Burstable otherwise.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	anySet, guaranteed := false, true
	for _, c := range all {
		req, lim := c.Resources.Requests, c.Resources.Limits
		if len(req) > 0 || len(lim) > 0 {
			anySet = true
		}
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			l, ok := lim[r]
			if !ok {
				guaranteed = false
				continue
			}
			if q, ok := req[r]; ok && q.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
