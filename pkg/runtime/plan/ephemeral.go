package plan

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// EphemeralSpec returns the container spec of the pod's i-th ephemeral
// container. EphemeralContainerCommon has exactly the fields of Container,
// so the pointer converts; it points into the pod's spec.
func EphemeralSpec(pod *v1.Pod, i int) *v1.Container {
	return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
}

// IsEphemeral reports whether name is one of the pod's ephemeral
// containers.
func IsEphemeral(pod *v1.Pod, name string) bool {
	if pod == nil {
		return false
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}

// ephemeral plans the ephemeral containers (kubectl debug) of a pod whose
// sandbox runs: each one that never ran is started, once. Once it ran it
// is never started again, whatever the pod's restart policy and however it
// ended, and a new sandbox does not bring it back: it is a one-off tool
// for looking into the pod as it is. They may start while init containers
// still run, as upstream lets them (debugging a stuck initialization).
func (p *planner) ephemeral() {
	for i := range p.pod.Spec.EphemeralContainers {
		ec := &p.pod.Spec.EphemeralContainers[i]
		if p.status.LatestContainer(ec.Name) != nil {
			continue
		}
		st := Start{Name: ec.Name, Spec: EphemeralSpec(p.pod, i), Ephemeral: true, Reason: "ephemeral container added"}
		if ec.TargetContainerName != "" {
			st.Target = ec.TargetContainerName
			st.TargetID = p.runningInSandbox(ec.TargetContainerName)
		}
		p.a.EphemeralToStart = append(p.a.EphemeralToStart, st)
	}
}

// runningInSandbox returns the ID of the running instance of the named
// container in the current sandbox, or "".
func (p *planner) runningInSandbox(name string) string {
	cs := p.status.LatestContainer(name)
	if cs == nil || cs.State != runtime.ContainerStateRunning || cs.SandboxID != p.a.SandboxID {
		return ""
	}
	return cs.ID
}
