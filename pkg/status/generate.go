// Package status turns what the runtime reports about a pod into the pod's
// API status (phase, conditions, container statuses, IPs) and keeps the
// latest status of every pod in a Cache that /pods and the API status sync
// read. Generation is a pure function of its Input.
package status

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// Input is everything Generate looks at.
type Input struct {
	Pod     *v1.Pod
	Runtime *runtime.PodStatus
	// Waiting carries why containers are not running, from the last sync.
	Waiting map[string]runtime.ContainerWaiting
	// Previous is the last status generated for this pod, if any: start time
	// and condition transition times carry over from it.
	Previous *v1.PodStatus
	HostIP   string
	// HostIPs are the node's IPs, HostIP first: one of each family on a
	// dual-stack node. Empty: HostIP alone.
	HostIPs []string
	// RuntimeName prefixes container IDs ("containerd://<id>").
	RuntimeName string
	Now         time.Time
	// Killed: the pod was stopped for good (deleted); its phase becomes
	// terminal as if its restart policy were Never.
	Killed bool
	// Probes is what the probes found of the pod's containers
	// (prober.View); nil: no probe holds a running container back.
	Probes ProbeResults
	// FailedReason, when set, is why the node failed the pod itself
	// (DeadlineExceeded): the phase is Failed with this reason and
	// FailedMessage.
	FailedReason, FailedMessage string
}

// ProbeResults tells what a running container instance's probes found.
type ProbeResults interface {
	// Started: the startup probe of instance id succeeded, or it has none.
	Started(name, id string) bool
	// Ready: the readiness probe of instance id succeeded, or it has none.
	Ready(name, id string) bool
}

// Generate returns the pod status for in.
func Generate(in Input) v1.PodStatus {
	pod := in.Pod
	now := metav1.NewTime(in.Now)
	s := v1.PodStatus{
		HostIP:   in.HostIP,
		QOSClass: QOSClass(pod),
		// The spec generation this status was made from (upstream's
		// observedGeneration, on the pod and on each of its conditions).
		ObservedGeneration: pod.Generation,
	}
	hostIPs := in.HostIPs
	if len(hostIPs) == 0 && in.HostIP != "" {
		hostIPs = []string{in.HostIP}
	}
	for _, ip := range DualStack(hostIPs) {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
	}
	if in.Previous != nil && in.Previous.StartTime != nil {
		s.StartTime = in.Previous.StartTime
	} else {
		s.StartTime = &now
	}
	// The node's primary family first (the first --node-ip's), as
	// upstream: the runtime's own order is not the cluster's preference.
	podIPs := runtime.OrderPodIPs(in.Runtime.PodIPs(), hostIPs)
	if pod.Spec.HostNetwork {
		podIPs = hostIPs
	}
	for _, ip := range DualStack(podIPs) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}

	s.InitContainerStatuses = containerStatuses(pod.Spec.InitContainers, true, in)
	s.ContainerStatuses = containerStatuses(pod.Spec.Containers, false, in)
	s.EphemeralContainerStatuses = ephemeralStatuses(pod, in)
	limitTerminationMessages(pod, &s)
	s.Phase = phase(pod, s.InitContainerStatuses, s.ContainerStatuses)
	if in.Killed {
		s.Phase = killedPhase(s.ContainerStatuses)
	}
	if in.FailedReason != "" {
		s.Phase, s.Reason, s.Message = v1.PodFailed, in.FailedReason, in.FailedMessage
	}
	if in.Previous != nil && (in.Previous.Phase == v1.PodSucceeded || in.Previous.Phase == v1.PodFailed) {
		// A pod never leaves a terminal phase.
		s.Phase = in.Previous.Phase
		if s.Reason == "" {
			s.Reason, s.Message = in.Previous.Reason, in.Previous.Message
		}
	}

	sandboxReady := readyToStartContainers(pod, in.Runtime)
	initDone := initReadiness(pod, s)
	containersReady := containersReadiness(pod, s)
	podReady := podReadiness(pod, containersReady)
	s.Conditions = []v1.PodCondition{
		condition(v1.PodReadyToStartContainers, sandboxReady, "", in.Previous, now),
		initDone.condition(v1.PodInitialized, in.Previous, now),
		containersReady.condition(v1.ContainersReady, in.Previous, now),
		podReady.condition(v1.PodReady, in.Previous, now),
		condition(v1.PodScheduled, true, "", in.Previous, now),
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.ObservedGeneration = pod.Generation
		if c.Status == v1.ConditionFalse && c.Reason != "" && c.Message == "" {
			c.Message = notReadyMessage(s)
		}
	}
	return s
}

// Waiting reasons of a container not yet running, with nothing more
// specific to say, as upstream: a pod with init containers shows
// PodInitializing on all its containers.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
)

// ephemeralStatuses reports the pod's ephemeral containers (kubectl debug)
// as upstream does: like an app container (waiting until created, then
// running or terminated, with image, image ID and container ID), but never
// ready and never restarted, so a terminated one stays terminated and its
// restart count stays 0.
func ephemeralStatuses(pod *v1.Pod, in Input) []v1.ContainerStatus {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		cs := containerStatus(c, false, Input{Pod: in.Pod, Runtime: in.Runtime, Waiting: in.Waiting, RuntimeName: in.RuntimeName})
		// No probes run for them; readiness is the app containers'.
		cs.Ready = false
		cs.LastTerminationState = v1.ContainerState{}
		cs.RestartCount = 0
		out = append(out, cs)
	}
	return out
}

func containerStatuses(specs []v1.Container, init bool, in Input) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for _, c := range specs {
		out = append(out, containerStatus(c, init, in))
	}
	return out
}

func containerStatus(c v1.Container, init bool, in Input) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	var latest, previous *runtime.ContainerStatus
	if in.Runtime != nil {
		for _, rc := range in.Runtime.Containers {
			if rc.Name != c.Name {
				continue
			}
			if latest == nil {
				latest = rc
			} else if previous == nil {
				previous = rc
				break
			}
		}
	}
	waiting, hasWaiting := in.Waiting[c.Name]
	defaultReason := reasonContainerCreating
	if len(in.Pod.Spec.InitContainers) > 0 {
		defaultReason = reasonPodInitializing
	}

	if latest == nil {
		reason := defaultReason
		var msg string
		if hasWaiting {
			reason, msg = waiting.Reason, waiting.Message
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason, Message: msg}
		// Started is always set, as upstream's prober sets it: clients
		// (the e2e framework among them) dereference it.
		started := false
		cs.Started = &started
		return cs
	}

	cs.ContainerID = containerID(in.RuntimeName, latest.ID)
	cs.ImageID = latest.ImageRef
	if latest.Image != "" {
		cs.Image = latest.Image
	}
	cs.RestartCount = int32(latest.RestartCount)
	if previous != nil && previous.State == runtime.ContainerStateExited {
		cs.LastTerminationState.Terminated = terminated(in.RuntimeName, previous)
	}

	switch latest.State {
	case runtime.ContainerStateRunning:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(latest.StartedAt)}
		started, ready := true, true
		if in.Probes != nil {
			started = in.Probes.Started(c.Name, latest.ID)
			ready = started && in.Probes.Ready(c.Name, latest.ID)
		}
		// A pod being deleted stops taking traffic at once, before its
		// containers are told to stop. An init container that is not a
		// sidecar is ready only once it completed.
		cs.Ready = ready && in.Pod.DeletionTimestamp == nil && (!init || isRestartableInit(c))
		cs.Started = &started
	case runtime.ContainerStateExited:
		started := false
		cs.Started = &started
		if hasWaiting {
			// About to be restarted (or backing off): waiting now, and the
			// instance that exited is the last termination.
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: waiting.Reason, Message: waiting.Message}
			cs.LastTerminationState.Terminated = terminated(in.RuntimeName, latest)
		} else {
			cs.State.Terminated = terminated(in.RuntimeName, latest)
			// An init container that completed is ready, as upstream
			// reports it (a sidecar is ready only while it runs).
			cs.Ready = init && !isRestartableInit(c) && latest.ExitCode == 0
		}
	default:
		started := false
		cs.Started = &started
		reason := defaultReason
		var msg string
		if hasWaiting {
			reason, msg = waiting.Reason, waiting.Message
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason, Message: msg}
	}
	return cs
}

func terminated(runtimeName string, c *runtime.ContainerStatus) *v1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" {
		reason = "Completed"
		if c.ExitCode != 0 {
			reason = "Error"
		}
	}
	return &v1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      reason,
		Message:     c.Message,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: containerID(runtimeName, c.ID),
	}
}

func containerID(runtimeName, id string) string {
	if runtimeName == "" {
		runtimeName = "containerd"
	}
	return runtimeName + "://" + id
}

// phase follows the API's pod lifecycle: Pending until every container has
// started once, Running while any runs or will be restarted, Succeeded or
// Failed once all have terminated for good.
func phase(pod *v1.Pod, inits, containers []v1.ContainerStatus) v1.PodPhase {
	policy := pod.Spec.RestartPolicy
	for i, st := range inits {
		if isRestartableInit(pod.Spec.InitContainers[i]) {
			continue
		}
		if t := st.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		if t := st.State.Terminated; t != nil && policy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		if st.LastTerminationState.Terminated != nil && policy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodPending
	}

	var waiting, running, stopped, succeeded, failed int
	for _, st := range containers {
		switch {
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			} else {
				failed++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				stopped++
				if t.ExitCode == 0 {
					succeeded++
				} else {
					failed++
				}
			} else {
				waiting++
			}
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		switch {
		case policy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case policy == v1.RestartPolicyOnFailure:
			return v1.PodRunning
		default:
			return v1.PodFailed
		}
	}
	return v1.PodPending
}

func isRestartableInit(c v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// initReadiness is upstream's PodInitialized: every init container
// completed (a sidecar: started), or an app container already ran (the
// pod was initialized before; its sidecars may be restarting), or the pod
// Succeeded. The message names the init containers not done, as upstream.
func initReadiness(pod *v1.Pod, s v1.PodStatus) readiness {
	var incomplete []string
	for i, st := range s.InitContainerStatuses {
		if isRestartableInit(pod.Spec.InitContainers[i]) {
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, st.Name)
			}
		} else if !st.Ready {
			incomplete = append(incomplete, st.Name)
		}
	}
	if len(incomplete) == 0 || s.Phase == v1.PodSucceeded {
		return readiness{ok: true}
	}
	for _, st := range s.ContainerStatuses {
		if st.State.Running != nil || st.State.Terminated != nil {
			return readiness{ok: true}
		}
	}
	return readiness{reason: "ContainersNotInitialized", message: fmt.Sprintf("containers with incomplete status: %s", incomplete)}
}

func condition(t v1.PodConditionType, ok bool, reason string, prev *v1.PodStatus, now metav1.Time) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, LastTransitionTime: now}
	if ok {
		c.Status = v1.ConditionTrue
	} else {
		c.Reason = reason
	}
	if prev != nil {
		for _, pc := range prev.Conditions {
			if pc.Type == t && pc.Status == c.Status {
				c.LastTransitionTime = pc.LastTransitionTime
			}
		}
	}
	return c
}

func notReadyMessage(s v1.PodStatus) string {
	var names []string
	for _, st := range s.ContainerStatuses {
		if !st.Ready {
			names = append(names, st.Name)
		}
	}
	return fmt.Sprintf("containers with unready status: %v", names)
}

// killedPhase: a pod stopped for good is Succeeded when every container
// exited 0, Failed otherwise (killed ones exit non-zero).
func killedPhase(containers []v1.ContainerStatus) v1.PodPhase {
	for _, st := range containers {
		if t := st.State.Terminated; t == nil || t.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}

// readyToStartContainers: the newest sandbox is ready and, off the host
// network, has its IP - the pod's network is set up, so containers can
// start (upstream's PodReadyToStartContainers).
func readyToStartContainers(pod *v1.Pod, rs *runtime.PodStatus) bool {
	sb := rs.LatestSandbox()
	if sb == nil || sb.State != runtime.SandboxStateReady {
		return false
	}
	return pod.Spec.HostNetwork || sb.IP != ""
}
