// Package plan decides, without doing any I/O, what must happen for a pod's
// runtime state to match its spec: whether the pod (sandbox) must be killed
// and recreated, which containers to kill, which to start, which wait out a
// crash-loop back-off, and which dead instances can go. podsync executes
// the result; keeping the decision pure keeps it table-testable.
package plan

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// BackoffView tells how long a container that exited at finishedAt must
// still wait, at now, before it may be restarted; 0 when it may restart now.
type BackoffView interface {
	Remaining(podUID types.UID, container string, finishedAt, now time.Time) time.Duration
}

// Actions is the plan for one sync of a pod, executed in this order:
// KillPod, ContainersToKill, CreateSandbox, EphemeralToStart,
// ContainersToStart, ContainersToRemove, SandboxesToRemove.
type Actions struct {
	// KillPod: stop every container and sandbox of the pod first.
	KillPod       bool
	KillPodReason string
	// CreateSandbox: create a sandbox with SandboxAttempt and start
	// ContainersToStart in it.
	CreateSandbox  bool
	SandboxAttempt uint32
	// SandboxID is the existing sandbox to start containers in, when no new
	// sandbox is created.
	SandboxID string
	// ContainersToKill, by container ID.
	ContainersToKill map[string]Kill
	// ContainersToStart in start order: spec order, init containers one at
	// a time before any app container.
	ContainersToStart []Start
	// EphemeralToStart are the ephemeral containers to start in the
	// existing sandbox, in spec order, before ContainersToStart (as
	// upstream: a failing init container does not keep a debugger out).
	EphemeralToStart []Start
	// ContainersInBackoff maps container names to the back-off still to
	// wait before their restart.
	ContainersInBackoff map[string]time.Duration
	// ContainersToRemove are IDs of dead instances no longer needed: per
	// container name the newest instance and the newest dead one (its "last
	// state") are kept.
	ContainersToRemove []string
	// SandboxesToRemove are IDs of dead sandboxes, other than the newest,
	// that no kept container belongs to.
	SandboxesToRemove []string
}

// Idle reports whether the plan does nothing: nothing to kill, create,
// start or remove, and no container waiting out a back-off (its restart
// needs a sync when the back-off ends). A pod whose plan is idle is as its
// spec wants, so another sync of the same runtime state would be a no-op.
func (a Actions) Idle() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.ContainersToKill) == 0 && len(a.ContainersToStart) == 0 &&
		len(a.EphemeralToStart) == 0 && len(a.ContainersInBackoff) == 0 && len(a.ContainersToRemove) == 0 && len(a.SandboxesToRemove) == 0
}

// StopOnly reports whether the plan's only action is KillPod: nothing is
// to be killed one by one, created, started, waited for or removed.
func (a Actions) StopOnly() bool {
	rest := a
	rest.KillPod = false
	return a.KillPod && rest.Idle()
}

// StopDone reports whether stopping the pod again would only repeat a stop
// already done: nothing of it may run (every container exited, no sandbox
// ready) and its newest sandbox is stopped, the sandbox an earlier stop of
// the whole pod stopped (its ID; "" when none is known, e.g. after a
// restart of nodelet, so a pod is always stopped once per process). A
// sandbox that died on its own is not stopped: stopping it releases its
// network, so it is stopped once.
func StopDone(status *runtime.PodStatus, stopped string) bool {
	sb := status.LatestSandbox()
	if stopped == "" || sb == nil || sb.ID != stopped {
		return false
	}
	for _, s := range status.Sandboxes {
		if s.State == runtime.SandboxStateReady {
			return false
		}
	}
	for _, c := range status.Containers {
		if c.State != runtime.ContainerStateExited {
			return false
		}
	}
	return true
}

// Settled reports whether a sync with plan a would change nothing: the
// plan is idle, or it only stops again a pod whose stop is done
// (StopDone). A pod that ran to completion (or failed, or is past its
// deadline) plans a KillPod on every sync, because its newest sandbox is
// not ready; the first one stops it, the others would only repeat the CRI
// calls. Upstream likewise stops syncing a pod once it finished.
func Settled(a Actions, status *runtime.PodStatus, stopped string) bool {
	return a.Idle() || (a.StopOnly() && !a.CreateSandbox && StopDone(status, stopped))
}

// Starts returns every container instance to start, in start order:
// EphemeralToStart, then ContainersToStart.
func (a Actions) Starts() []Start {
	if len(a.EphemeralToStart) == 0 {
		return a.ContainersToStart
	}
	return append(append([]Start(nil), a.EphemeralToStart...), a.ContainersToStart...)
}

// Kill says why a container is stopped.
type Kill struct {
	Name   string
	Reason string
	// Message, when set, is the whole Killing event message (upstream's
	// "Container c failed liveness probe, will be restarted").
	Message string
	// GracePeriod, when set, overrides the pod's grace period (seconds): a
	// failed probe's own terminationGracePeriodSeconds.
	GracePeriod *int64
}

// Probes is what the plan needs of a pod's probes (prober.View implements
// it). nil: no probe runs; every running container is started and healthy.
type Probes interface {
	// Started: instance id of the named container passed its startup
	// probe, or has none. A sidecar must be started before the next
	// container starts.
	Started(name, id string) bool
	// Unhealthy returns "liveness" or "startup" when that probe of
	// instance id failed (it must be restarted), else "".
	Unhealthy(name, id string) string
}

// Start is one container instance to create and start.
type Start struct {
	Name string
	// Spec points into the pod's spec.
	Spec         *v1.Container
	Init         bool
	RestartCount int
	Reason       string
	// AfterExit, when set, is when the instance this one replaces exited:
	// the start is a crash-loop restart and advances the back-off.
	AfterExit time.Time
	// Ephemeral: an ephemeral container (Spec points into the pod's
	// ephemeralContainers), started once and never restarted.
	Ephemeral bool
	// Target is an ephemeral container's targetContainerName: it joins
	// that container's process namespace. TargetID is the running
	// instance of the target in the sandbox, "" when none runs (the start
	// must fail: there is no namespace to join).
	Target, TargetID string
}

// Compute plans a sync of pod given what runs (status may be nil: nothing
// runs). backoff may be nil: no back-off.
func Compute(pod *v1.Pod, status *runtime.PodStatus, backoff BackoffView, now time.Time) Actions {
	return ComputeWithProbes(pod, status, backoff, nil, now)
}

// ComputeWithProbes is Compute for a pod whose probes found what probes
// says (nil: nothing): a container that failed its liveness or startup
// probe is killed and, as its restart policy says, restarted.
func ComputeWithProbes(pod *v1.Pod, status *runtime.PodStatus, backoff BackoffView, probes Probes, now time.Time) Actions {
	if status == nil {
		status = &runtime.PodStatus{}
	}
	p := planner{pod: pod, status: status, backoff: backoff, probes: probes, now: now, a: Actions{
		ContainersToKill:    map[string]Kill{},
		ContainersInBackoff: map[string]time.Duration{},
	}}
	if reason := sandboxChange(pod, status); reason != "" {
		p.recreate(reason)
	} else {
		p.a.SandboxID = status.LatestSandbox().ID
		p.inSandbox()
	}
	if p.a.KillPod {
		// Nothing starts in a sandbox that is being stopped.
		p.a.EphemeralToStart = nil
	}
	p.prune()
	return p.a
}

type planner struct {
	pod     *v1.Pod
	status  *runtime.PodStatus
	backoff BackoffView
	probes  Probes
	now     time.Time
	a       Actions
}

// sandboxChange returns why the pod needs a new sandbox, or "".
func sandboxChange(pod *v1.Pod, status *runtime.PodStatus) string {
	sb := status.LatestSandbox()
	if sb == nil {
		return "no sandbox"
	}
	if sb.State != runtime.SandboxStateReady {
		return fmt.Sprintf("sandbox %s is not ready", sb.ID)
	}
	ready := 0
	for _, s := range status.Sandboxes {
		if s.State == runtime.SandboxStateReady {
			ready++
		}
	}
	if ready > 1 {
		return fmt.Sprintf("%d sandboxes are ready, want 1", ready)
	}
	if sb.HostNetwork != pod.Spec.HostNetwork {
		return fmt.Sprintf("sandbox %s network mode changed", sb.ID)
	}
	if !sb.HostNetwork && sb.IP == "" {
		return fmt.Sprintf("sandbox %s has no IP", sb.ID)
	}
	return ""
}

// recreate plans a new sandbox (after killing what is left of the old),
// unless the pod has nothing left to run.
func (p *planner) recreate(reason string) {
	sb := p.status.LatestSandbox()
	if sb != nil {
		p.a.KillPod, p.a.KillPodReason = true, reason
	}
	if p.pod.DeletionTimestamp != nil {
		return
	}
	// A pod that ran to completion does not come back: under Never any
	// container that ran means the pod is done; under OnFailure the
	// containers that succeeded stay done.
	policy := p.pod.Spec.RestartPolicy
	if sb != nil && policy == v1.RestartPolicyNever && len(p.status.Containers) > 0 {
		return
	}
	var apps []*v1.Container
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		if policy == v1.RestartPolicyOnFailure && succeeded(p.status.LatestContainer(c.Name)) {
			continue
		}
		apps = append(apps, c)
	}
	if len(apps) == 0 {
		return
	}
	p.a.CreateSandbox = true
	if sb != nil {
		p.a.SandboxAttempt = sb.Attempt + 1
	}
	// A new sandbox is a fresh pod environment: init containers run again.
	if len(p.pod.Spec.InitContainers) > 0 {
		p.start(&p.pod.Spec.InitContainers[0], true, "initializing new sandbox")
		return
	}
	for _, c := range apps {
		p.start(c, false, "new sandbox")
	}
}

// inSandbox plans within a healthy sandbox: init containers first, one at a
// time, then the app containers.
func (p *planner) inSandbox() {
	if p.pod.DeletionTimestamp != nil {
		return
	}
	p.ephemeral()
	if !p.initDone() {
		return
	}
	kept := 0
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		cs := p.status.LatestContainer(c.Name)
		switch {
		case cs == nil:
			p.start(c, false, "not started yet")
		case cs.State == runtime.ContainerStateRunning:
			switch {
			case cs.SandboxID != p.a.SandboxID:
				p.kill(cs, fmt.Sprintf("belongs to sandbox %s, not the current one", cs.SandboxID))
				p.start(c, false, "replacing a container of an old sandbox")
			case specChanged(p.pod, c, cs):
				p.kill(cs, "container spec changed")
				p.start(c, false, "container spec changed")
			case p.unhealthy(cs) != "":
				// Counted as kept: under restartPolicy Never the pod is
				// stopped at the next sync, after this kill said why.
				p.restartUnhealthy(c, false, cs)
				kept++
			default:
				kept++
			}
		case cs.State == runtime.ContainerStateExited:
			if !shouldRestart(p.pod.Spec.RestartPolicy, cs) {
				continue
			}
			p.startAfterExit(c, false, cs)
		default: // created but never started, or unknown
			p.kill(cs, fmt.Sprintf("container is in state %q", cs.State))
			p.start(c, false, fmt.Sprintf("previous instance in state %q", cs.State))
		}
	}
	if kept == 0 && len(p.a.ContainersToStart) == 0 && len(p.a.ContainersInBackoff) == 0 {
		// Running sidecars do not keep a pod whose app containers are done:
		// they are stopped with it.
		p.a.KillPod, p.a.KillPodReason = true, "all containers have terminated"
		return
	}
	p.keepSidecars()
}

// specChanged reports whether running container cs was created from a
// spec other than c, by upstream's rule: its name or image changed
// (runtime.HashContainer), which is all the API lets change on an API pod's
// container without a resize. A static pod's manifest may change any field
// while its UID stays, so its containers also carry the whole spec's hash;
// containers made by another agent lack it and are judged by upstream's
// hash alone, so a takeover restarts nothing.
//
// A container created by an older nodelet carries the whole spec's hash in
// place of upstream's (the rule before upstream's was adopted): equal to the
// spec's, it is unchanged and kept, so the upgrade restarts nothing.
func specChanged(pod *v1.Pod, c *v1.Container, cs *runtime.ContainerStatus) bool {
	if cs.Hash != runtime.HashContainer(c) {
		return cs.Hash != runtime.HashContainerSpec(c)
	}
	return cs.SpecHash != 0 && podutil.IsStatic(pod) && cs.SpecHash != runtime.HashContainerSpec(c)
}

// initDone walks the init containers in order and plans the next step of
// initialization. It reports whether initialization is complete.
func (p *planner) initDone() bool {
	if len(p.pod.Spec.InitContainers) == 0 {
		return true
	}
	// Once an app container ran in this sandbox, initialization is over,
	// even if the init containers' records were since removed.
	for i := range p.pod.Spec.Containers {
		if cs := p.status.LatestContainer(p.pod.Spec.Containers[i].Name); cs != nil && cs.SandboxID == p.a.SandboxID {
			return true
		}
	}
	for i := range p.pod.Spec.InitContainers {
		c := &p.pod.Spec.InitContainers[i]
		cs := p.status.LatestContainer(c.Name)
		if cs != nil && cs.SandboxID != p.a.SandboxID {
			cs = nil // ran in an earlier sandbox: it must run again here
		}
		if isSidecar(c) {
			// A restartable init container only has to be running for
			// the next one to start.
			if cs != nil && cs.State == runtime.ContainerStateRunning && p.unhealthy(cs) != "" {
				p.restartUnhealthy(c, true, cs)
				return false
			}
			if cs != nil && cs.State == runtime.ContainerStateRunning && specChanged(p.pod, c, cs) {
				p.kill(cs, "container spec changed")
				p.start(c, true, "container spec changed")
				return false
			}
			if cs != nil && cs.State == runtime.ContainerStateRunning {
				if !p.started(cs) {
					return false // its startup probe has not passed yet
				}
				continue
			}
			if cs != nil && cs.State == runtime.ContainerStateExited {
				p.startAfterExit(c, true, cs)
			} else {
				p.replace(c, cs)
			}
			return false
		}
		switch {
		case cs == nil:
			p.start(c, true, "next init container")
			return false
		case cs.State == runtime.ContainerStateRunning:
			return false // wait for it
		case cs.State == runtime.ContainerStateExited && cs.ExitCode == 0:
			continue
		case cs.State == runtime.ContainerStateExited:
			if p.pod.Spec.RestartPolicy == v1.RestartPolicyNever {
				p.a.KillPod = true
				p.a.KillPodReason = fmt.Sprintf("init container %q failed with exit code %d and restartPolicy is Never", c.Name, cs.ExitCode)
				return false
			}
			p.startAfterExit(c, true, cs)
			return false
		default:
			p.replace(c, cs)
			return false
		}
	}
	return true
}

// replace kills a created/unknown instance (if any) and starts a new one.
func (p *planner) replace(c *v1.Container, cs *runtime.ContainerStatus) {
	if cs != nil {
		p.kill(cs, fmt.Sprintf("container is in state %q", cs.State))
	}
	p.start(c, true, "next init container")
}

// startAfterExit restarts a container that exited, unless it is still
// backing off.
func (p *planner) startAfterExit(c *v1.Container, init bool, cs *runtime.ContainerStatus) {
	if p.backoff != nil {
		if d := p.backoff.Remaining(p.pod.UID, c.Name, cs.FinishedAt, p.now); d > 0 {
			p.a.ContainersInBackoff[c.Name] = d
			return
		}
	}
	p.a.ContainersToStart = append(p.a.ContainersToStart, Start{
		Name:         c.Name,
		Spec:         c,
		Init:         init,
		RestartCount: cs.RestartCount + 1,
		Reason:       fmt.Sprintf("exited with code %d", cs.ExitCode),
		AfterExit:    cs.FinishedAt,
	})
}

// start starts a container whose previous instance, if any, did not exit
// on its own (or none exists), so no back-off applies. A container whose
// latest instance exited backs off even in a new sandbox.
func (p *planner) start(c *v1.Container, init bool, reason string) {
	cs := p.status.LatestContainer(c.Name)
	if cs != nil && cs.State == runtime.ContainerStateExited && p.a.CreateSandbox {
		p.startAfterExit(c, init, cs)
		return
	}
	rc := 0
	if cs != nil {
		rc = cs.RestartCount + 1
	}
	p.a.ContainersToStart = append(p.a.ContainersToStart, Start{
		Name: c.Name, Spec: c, Init: init, RestartCount: rc, Reason: reason,
	})
}

func (p *planner) kill(cs *runtime.ContainerStatus, reason string) {
	p.a.ContainersToKill[cs.ID] = Kill{Name: cs.Name, Reason: reason}
}

// prune picks dead instances and sandboxes that no longer serve a purpose.
func (p *planner) prune() {
	kept := map[string]bool{} // sandbox IDs with a kept container
	newest := map[string]bool{}
	keptDead := map[string]bool{}
	for _, cs := range p.status.Containers { // newest first
		dead := cs.State == runtime.ContainerStateExited || cs.State == runtime.ContainerStateCreated
		switch {
		case !newest[cs.Name]:
			newest[cs.Name] = true
			if dead {
				keptDead[cs.Name] = true
			}
		case dead && !keptDead[cs.Name]:
			keptDead[cs.Name] = true
		case dead:
			if _, killing := p.a.ContainersToKill[cs.ID]; !killing {
				p.a.ContainersToRemove = append(p.a.ContainersToRemove, cs.ID)
			}
			continue
		}
		kept[cs.SandboxID] = true
	}
	for i, sb := range p.status.Sandboxes {
		if i == 0 || sb.State == runtime.SandboxStateReady || kept[sb.ID] {
			continue
		}
		p.a.SandboxesToRemove = append(p.a.SandboxesToRemove, sb.ID)
	}
}

// shouldRestart applies the restart policy to a container that exited.
func shouldRestart(policy v1.RestartPolicy, cs *runtime.ContainerStatus) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return cs.ExitCode != 0
	default:
		return true
	}
}

func succeeded(cs *runtime.ContainerStatus) bool {
	return cs != nil && cs.State == runtime.ContainerStateExited && cs.ExitCode == 0
}

func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}
