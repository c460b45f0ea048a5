// Package cristatus reads what a CRI runtime reported (cri.PodState) as
// nodelet's runtime model: runtime.PodStatus for one pod, runtime.Pod for
// every pod found, and the CRI states and timestamps in the model's terms.
// It is the way back from the CRI, as package criconfig is the way there;
// it is a package of its own, not a part of criconfig, because the two
// share no code and are used by different callers (criconfig by the
// syncer's starts, cristatus by whoever reads the runtime: the agent's pod
// status, the relister, garbage collection), and not a part of package
// runtime, which stays free of CRI wire types. It does no I/O: the client
// reads, this package only converts, and its tests are tables.
package cristatus

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// PodStatus is the state the runtime reported for pod uid (cri.Client's
// PodState) in the runtime model, sandboxes and containers newest first.
// Containers without kubelet identity are left out.
func PodStatus(uid types.UID, name, namespace string, s *cri.PodState) *runtime.PodStatus {
	ps := &runtime.PodStatus{UID: uid, Name: name, Namespace: namespace}
	for i, sb := range s.Sandboxes {
		st := sandboxFromList(sb)
		if i == 0 && s.SandboxStatus != nil {
			applySandboxStatus(st, s.SandboxStatus)
		}
		ps.Sandboxes = append(ps.Sandboxes, st)
	}
	for i, ctr := range s.Containers {
		var detail *runtimeapi.ContainerStatus
		if i < len(s.ContainerStatuses) {
			detail = s.ContainerStatuses[i]
		}
		cs, err := containerStatus(ctr, detail)
		if errors.Is(err, cri.ErrNotManaged) {
			continue
		}
		if err != nil {
			klog.V(4).InfoS("Container has malformed identity", "containerID", ctr.Id, "err", err)
		}
		ps.Containers = append(ps.Containers, cs)
	}
	return ps
}

// Pods groups listed sandboxes and containers (cri.Client's ListState) by
// pod UID, skipping those without kubelet identity, with the IDs and states
// of what exists, newest first, and the config source recorded on each
// pod's newest sandbox.
func Pods(s *cri.PodState) []*runtime.Pod {
	var c PodsCache
	return c.Pods(s)
}

func sandboxFromList(sb *runtimeapi.PodSandbox) *runtime.SandboxStatus {
	id, _ := cri.ParseSandboxIdentity(sb.Labels, sb.Annotations)
	return &runtime.SandboxStatus{
		ID:          sb.Id,
		State:       SandboxState(sb.State),
		CreatedAt:   TimeFromUnixNano(sb.CreatedAt),
		Attempt:     sb.GetMetadata().GetAttempt(),
		HostNetwork: id.HostNetwork,
	}
}

func applySandboxStatus(s *runtime.SandboxStatus, st *runtimeapi.PodSandboxStatus) {
	s.State = SandboxState(st.State)
	s.HostNetwork = st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	if ip := st.GetNetwork().GetIp(); ip != "" {
		s.IP = ip
		s.IPs = append(s.IPs, ip)
	}
	for _, extra := range st.GetNetwork().GetAdditionalIps() {
		if extra.GetIp() != "" {
			s.IPs = append(s.IPs, extra.GetIp())
		}
	}
}

// containerStatus builds a runtime.ContainerStatus from list data and, when
// fetched, the detailed status. The error is the identity parse error; on
// ErrMalformedIdentity the status is still usable.
func containerStatus(ctr *runtimeapi.Container, st *runtimeapi.ContainerStatus) (*runtime.ContainerStatus, error) {
	id, err := cri.ParseContainerIdentity(ctr.Labels, ctr.Annotations)
	cs := &runtime.ContainerStatus{
		ID:                       ctr.Id,
		Name:                     id.ContainerName,
		State:                    ContainerState(ctr.State),
		CreatedAt:                TimeFromUnixNano(ctr.CreatedAt),
		Image:                    ctr.GetImage().GetImage(),
		ImageRef:                 ctr.ImageRef,
		Hash:                     id.Hash,
		SpecHash:                 id.SpecHash,
		RestartCount:             id.RestartCount,
		SandboxID:                ctr.PodSandboxId,
		TerminationGracePeriod:   id.TerminationGracePeriod,
		TerminationMessagePath:   id.TerminationMessagePath,
		TerminationMessagePolicy: id.TerminationMessagePolicy,
	}
	if _, ok := ctr.Annotations[cri.AnnotationContainerRestartCount]; !ok {
		// Identity from elsewhere without the annotation: the CRI attempt
		// is the same number.
		cs.RestartCount = int(ctr.GetMetadata().GetAttempt())
	}
	if st != nil {
		cs.State = ContainerState(st.State)
		cs.StartedAt = TimeFromUnixNano(st.StartedAt)
		cs.FinishedAt = TimeFromUnixNano(st.FinishedAt)
		cs.ExitCode = st.ExitCode
		cs.Reason = st.Reason
		cs.Message = st.Message
		cs.LogPath = st.LogPath
		if img := st.GetImage().GetImage(); img != "" {
			cs.Image = img
		}
		if st.ImageRef != "" {
			cs.ImageRef = st.ImageRef
		}
		if id.TerminationMessagePath != "" {
			for _, m := range st.GetMounts() {
				if m.GetContainerPath() == id.TerminationMessagePath {
					cs.TerminationMessageFile = m.GetHostPath()
					break
				}
			}
		}
	}
	return cs, err
}

// SandboxState is s in nodelet's runtime model.
func SandboxState(s runtimeapi.PodSandboxState) runtime.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return runtime.SandboxStateReady
	}
	return runtime.SandboxStateNotReady
}

// ContainerState is s in nodelet's runtime model.
func ContainerState(s runtimeapi.ContainerState) runtime.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return runtime.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return runtime.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return runtime.ContainerStateExited
	default:
		return runtime.ContainerStateUnknown
	}
}

// TimeFromUnixNano is a CRI timestamp as a time; 0 (not set) is the zero
// time, not 1970.
func TimeFromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
