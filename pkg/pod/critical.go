package pod

import v1 "k8s.io/api/core/v1"

// SystemCriticalPriority is the lowest priority of the system-* priority
// classes (system-cluster-critical, system-node-critical): a pod at or
// above it is critical.
const SystemCriticalPriority int32 = 2000000000

// IsCritical reports whether p is critical, as upstream's IsCriticalPod: a
// static or mirror pod, or one of system-critical priority. Critical pods
// preempt at admission and keep the lowest OOM score.
func IsCritical(p *v1.Pod) bool {
	return IsStatic(p) || IsMirror(p) || (p.Spec.Priority != nil && *p.Spec.Priority >= SystemCriticalPriority)
}
