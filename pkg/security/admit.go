package security

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
)

// Rejection is why a pod is refused at admission: it never runs on this
// node, and its status becomes Failed with Reason and Message, as the
// upstream kubelet's admission handlers do.
type Rejection struct {
	Reason  string
	Message string
}

// Admission reasons besides ReasonSysctlForbidden.
const (
	ReasonAppArmor                             = "AppArmor"
	ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	// ReasonProcMount refuses an Unmasked /proc without a user namespace,
	// which the API server's validation refuses for API pods; static pods
	// reach nodelet without it.
	ReasonProcMount = "ProcMountForbidden"
	// ReasonOSSelector and ReasonOSNotSupported refuse a pod meant for
	// another OS (its kubernetes.io/os label, its spec.os).
	ReasonOSSelector     = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported = "PodOSNotSupported"
)

// IsAdmissionReason reports whether a pod status reason is one Admit
// gives: a pod that shows it was refused by a node agent's admission.
func IsAdmissionReason(reason string) bool {
	switch reason {
	case ReasonSysctlForbidden, ReasonAppArmor, ReasonSupplementalGroupsPolicyNotSupported, ReasonProcMount,
		ReasonOSSelector, ReasonOSNotSupported:
		return true
	}
	return false
}

// Node is what admission needs to know about the node and its runtime.
type Node struct {
	Sysctls *SysctlAllowlist
	// AppArmor is whether the kernel enforces AppArmor (HostAppArmor).
	AppArmor bool
	// SupplementalGroupsPolicy is whether the runtime honours
	// supplementalGroupsPolicy: Strict.
	SupplementalGroupsPolicy bool
}

// Admit decides whether pod may run on the node; nil admits it. The checks
// run in the upstream kubelet's order and the first refusal wins.
func Admit(pod *v1.Pod, node Node) *Rejection {
	if node.Sysctls != nil {
		if r := node.Sysctls.AdmitSysctls(pod); r != nil {
			return r
		}
	}
	// As upstream, AppArmor is checked only for pods that have not run
	// yet (a static pod's phase is empty: nodelet's sources set none).
	if pod.Status.Phase == "" || pod.Status.Phase == v1.PodPending {
		if err := validateAppArmor(pod, node.AppArmor); err != nil {
			return &Rejection{Reason: ReasonAppArmor, Message: fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil &&
		*sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict && !node.SupplementalGroupsPolicy {
		return &Rejection{
			Reason:  ReasonSupplementalGroupsPolicyNotSupported,
			Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict),
		}
	}
	if name, ok := unmaskedWithoutUserNamespace(pod); ok {
		return &Rejection{
			Reason:  ReasonProcMount,
			Message: fmt.Sprintf("container %q: procMount Unmasked requires `hostUsers: false`", name),
		}
	}
	// The node's kubernetes.io/os label is always this OS (nodelet sets it).
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != runtime.GOOS {
		return &Rejection{Reason: ReasonOSSelector,
			Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return &Rejection{Reason: ReasonOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	return nil
}

func unmaskedWithoutUserNamespace(pod *v1.Pod) (string, bool) {
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		return "", false
	}
	for _, c := range AllContainers(pod) {
		if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount {
			return c.Name, true
		}
	}
	return "", false
}

// AllContainers returns the pod's init, regular and ephemeral containers'
// specs, in that order.
func AllContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)+len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}
