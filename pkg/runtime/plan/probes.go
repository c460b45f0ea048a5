package plan

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func (p *planner) unhealthy(cs *runtime.ContainerStatus) string {
	if p.probes == nil {
		return ""
	}
	return p.probes.Unhealthy(cs.Name, cs.ID)
}

func (p *planner) started(cs *runtime.ContainerStatus) bool {
	return p.probes == nil || p.probes.Started(cs.Name, cs.ID)
}

// restartUnhealthy kills a running container whose liveness or startup
// probe failed and, unless the pod's restart policy is Never (a sidecar is
// always restarted), restarts it at once, as upstream does; the crash-loop
// back-off applies as if the container had crashed: measured from the
// exit of its previous instance.
func (p *planner) restartUnhealthy(c *v1.Container, init bool, cs *runtime.ContainerStatus) {
	probe := p.unhealthy(cs)
	restart := p.pod.Spec.RestartPolicy != v1.RestartPolicyNever || isSidecar(c)
	msg := fmt.Sprintf("Container %s failed %s probe", c.Name, probe)
	if restart {
		msg += ", will be restarted"
	}
	p.a.ContainersToKill[cs.ID] = Kill{Name: cs.Name, Reason: msg, Message: msg, GracePeriod: probeGrace(p.pod, c, probe)}
	if !restart {
		return
	}
	if prev := p.previousExit(c.Name); prev != nil {
		p.startAfterExit(c, init, prev)
		if n := len(p.a.ContainersToStart); n > 0 && p.a.ContainersToStart[n-1].Name == c.Name {
			p.a.ContainersToStart[n-1].RestartCount = cs.RestartCount + 1
			p.a.ContainersToStart[n-1].Reason = msg
		}
		return
	}
	p.a.ContainersToStart = append(p.a.ContainersToStart, Start{
		Name: c.Name, Spec: c, Init: init, RestartCount: cs.RestartCount + 1, Reason: msg,
	})
}

// previousExit returns the newest exited instance of the named container
// other than its latest, or nil.
func (p *planner) previousExit(name string) *runtime.ContainerStatus {
	seen := false
	for _, cs := range p.status.Containers {
		if cs.Name != name {
			continue
		}
		if !seen {
			seen = true
			continue
		}
		if cs.State == runtime.ContainerStateExited {
			return cs
		}
	}
	return nil
}

// probeGrace is the grace period of a kill after a failed probe: the
// probe's own terminationGracePeriodSeconds, unless the pod is being
// deleted with its own.
func probeGrace(pod *v1.Pod, c *v1.Container, probe string) *int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return nil
	}
	var pr *v1.Probe
	switch probe {
	case "liveness":
		pr = c.LivenessProbe
	case "startup":
		pr = c.StartupProbe
	}
	if pr == nil || pr.TerminationGracePeriodSeconds == nil {
		return nil
	}
	g := *pr.TerminationGracePeriodSeconds
	return &g
}
