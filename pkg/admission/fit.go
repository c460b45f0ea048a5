// Package admission decides whether a pod fits on this node beside the pods
// already admitted, as the upstream kubelet's admission does before it
// starts anything: resources (CPU, memory, ephemeral storage, extended
// resources, the pod count) against the node's allocatable, the node name,
// node selector and required node affinity, host ports, and NoExecute
// taints. It is pure: the agent gives it the node and the active pods.
package admission

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Reasons of a refused pod, as upstream writes them into its status.
const (
	ReasonOutOfPrefix     = "OutOf" // + the resource name: OutOfcpu, OutOfmemory, OutOfpods, ...
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"
)

// IsReason reports whether a pod status reason is one Fit gives.
func IsReason(reason string) bool {
	switch reason {
	case ReasonNodeAffinity, ReasonNodeName, ReasonNodePorts, ReasonTaintToleration:
		return true
	}
	return strings.HasPrefix(reason, ReasonOutOfPrefix)
}

// Refusal is why a pod does not fit.
type Refusal struct {
	Reason  string
	Message string
}

// Node is what the checks read of the node: its object (name, labels,
// taints) and what it can give pods (status.allocatable, with pods).
type Node struct {
	Object      *v1.Node
	Allocatable v1.ResourceList
}

// Fit returns nil when p fits on node beside active (the admitted pods that
// have not finished, without p), else the first reason it does not, in
// upstream's order: resources, node affinity, node name, host ports, then
// NoExecute taints (not for static pods, as upstream).
func Fit(p *v1.Pod, active []*v1.Pod, node Node, static bool) *Refusal {
	if r := fitResources(p, active, node.Allocatable); r != nil {
		return r
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(node.Object); err != nil || !ok {
		return predicate(ReasonNodeAffinity, "node(s) didn't match Pod's node affinity/selector")
	}
	if p.Spec.NodeName != "" && p.Spec.NodeName != node.Object.Name {
		return predicate(ReasonNodeName, "node(s) didn't match the requested node name")
	}
	if portsConflict(p, active) {
		return predicate(ReasonNodePorts, "node(s) didn't have free ports for the requested pod ports")
	}
	if !static {
		noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
		if _, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(klog.Background(), node.Object.Spec.Taints, p.Spec.Tolerations, noExecute, false); untolerated {
			return predicate(ReasonTaintToleration, "node(s) had untolerated taint(s)")
		}
	}
	return nil
}

func predicate(name, desc string) *Refusal {
	return &Refusal{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// fitResources checks each resource p requests against what the node has
// left, and the pod count. A requested extended resource the node does not
// advertise at all is not checked, as upstream (it may be cluster-level or
// backed by DRA).
func fitResources(p *v1.Pod, active []*v1.Pod, allocatable v1.ResourceList) *Refusal {
	if maxPods, ok := allocatable[v1.ResourcePods]; ok && int64(len(active))+1 > maxPods.Value() {
		return outOf(v1.ResourcePods, 1, int64(len(active)), maxPods.Value())
	}
	want := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	used := v1.ResourceList{}
	for _, o := range active {
		for name, q := range resourcehelper.PodRequests(o, resourcehelper.PodResourcesOptions{}) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	// Upstream's order: CPU, memory, ephemeral storage, then the others.
	names := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}
	for name := range want {
		if name != v1.ResourceCPU && name != v1.ResourceMemory && name != v1.ResourceEphemeralStorage {
			names = append(names, name)
		}
	}
	for _, name := range names {
		req, ok := want[name]
		if !ok || req.Sign() <= 0 {
			continue
		}
		capQ, known := allocatable[name]
		if !known {
			if name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage {
				capQ = zero(name)
			} else {
				continue
			}
		}
		u := used[name]
		if req.Cmp(left(capQ, u)) > 0 {
			return outOf(name, value(name, req), value(name, u), value(name, capQ))
		}
	}
	return nil
}

func left(capacity, used resourceQuantity) resourceQuantity {
	l := capacity.DeepCopy()
	l.Sub(used)
	return l
}

// value is the figure upstream's message shows: millicores for CPU, the
// plain value for the rest.
func value(name v1.ResourceName, q resourceQuantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func outOf(name v1.ResourceName, requested, used, capacity int64) *Refusal {
	return &Refusal{
		Reason: ReasonOutOfPrefix + string(name),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity),
	}
}
