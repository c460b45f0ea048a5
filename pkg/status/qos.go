package status

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// QOSClass classifies a pod as the API server does: Guaranteed when every
// container sets equal CPU and memory limits and requests, BestEffort when
// none sets any CPU or memory, Burstable otherwise. A pod that sets
// pod-level resources is classified by those alone. Only CPU and memory
// count; a request missing beside a limit counts as equal to it (the API
// server defaults it so).
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var qos v1.PodQOSClass
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			switch c := requirementsQOS(&cs[i].Resources); {
			case c == v1.PodQOSBurstable:
				return c
			case qos == "":
				qos = c
			case qos != c:
				return v1.PodQOSBurstable
			}
		}
	}
	if qos == "" {
		return v1.PodQOSBestEffort
	}
	return qos
}

// requirementsQOS classifies one set of requirements by CPU and memory:
// Burstable as soon as one resource is, or when they disagree.
func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	cpu, mem := resourceQOS(r, v1.ResourceCPU), resourceQOS(r, v1.ResourceMemory)
	if cpu != mem {
		return v1.PodQOSBurstable
	}
	return cpu
}

func resourceQOS(r *v1.ResourceRequirements, name v1.ResourceName) v1.PodQOSClass {
	lim, hasLim := r.Limits[name]
	req, hasReq := r.Requests[name]
	if !hasReq && hasLim {
		req = lim
	}
	switch {
	case !req.Equal(lim):
		return v1.PodQOSBurstable
	case req.IsZero():
		return v1.PodQOSBestEffort
	}
	return v1.PodQOSGuaranteed
}
