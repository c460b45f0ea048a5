package plan

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// fakeProbes: unhealthy maps container IDs to the probe that failed;
// notStarted lists IDs whose startup probe has not passed.
type fakeProbes struct {
	unhealthy  map[string]string
	notStarted map[string]bool
}

func (f fakeProbes) Started(_, id string) bool     { return !f.notStarted[id] }
func (f fakeProbes) Unhealthy(_, id string) string { return f.unhealthy[id] }

func cs(c ...*runtime.ContainerStatus) []*runtime.ContainerStatus { return c }

func TestRestartUnhealthy(t *testing.T) {
	pod := newPod()
	a2 := ctr("a2", "a", "sb", running, 0, 2)
	a1 := ctr("a1", "a", "sb", exited, 137, 1)
	b := ctr("b1", "b", "sb", running, 0, 0)
	tests := []struct {
		name    string
		pod     *v1.Pod
		probes  fakeProbes
		backoff fakeBackoff
		cs      []*runtime.ContainerStatus
		want    view
		msg     string
	}{
		{"healthy: nothing", pod, fakeProbes{}, nil, cs(a2, b), view{SandboxID: "sb"}, ""},
		{"liveness failed: kill and restart at once", pod, fakeProbes{unhealthy: map[string]string{"b1": "liveness"}}, nil, cs(a2, b),
			view{SandboxID: "sb", Kill: []string{"b1(b)"}, Start: []string{"b/1"}}, "Container b failed liveness probe, will be restarted"},
		{"startup failed", pod, fakeProbes{unhealthy: map[string]string{"b1": "startup"}}, nil, cs(a2, b),
			view{SandboxID: "sb", Kill: []string{"b1(b)"}, Start: []string{"b/1"}}, "Container b failed startup probe, will be restarted"},
		{"a previous exit: crash-loop restart", pod, fakeProbes{unhealthy: map[string]string{"a2": "liveness"}}, nil, cs(a2, a1, b),
			view{SandboxID: "sb", Kill: []string{"a2(a)"}, Start: []string{"a/3+backoff"}}, "Container a failed liveness probe, will be restarted"},
		{"a previous exit still backing off", pod, fakeProbes{unhealthy: map[string]string{"a2": "liveness"}}, fakeBackoff{"a": 20 * time.Second}, cs(a2, a1, b),
			view{SandboxID: "sb", Kill: []string{"a2(a)"}, Backoff: map[string]time.Duration{"a": 20 * time.Second}}, "Container a failed liveness probe, will be restarted"},
		{"restartPolicy Never: kill only", newPod(policy(v1.RestartPolicyNever)), fakeProbes{unhealthy: map[string]string{"b1": "liveness"}}, nil, cs(a2, b),
			view{SandboxID: "sb", Kill: []string{"b1(b)"}}, "Container b failed liveness probe"},
		{"sidecar not started holds back the app containers", newPod(inits("side")), fakeProbes{notStarted: map[string]bool{"s1": true}}, nil,
			cs(ctr("s1", "side", "sb", running, 0, 0)), view{SandboxID: "sb"}, ""},
		{"started sidecar lets them start", newPod(inits("side")), fakeProbes{}, nil,
			cs(ctr("s1", "side", "sb", running, 0, 0)), view{SandboxID: "sb", Start: []string{"a/0", "b/0"}}, ""},
		{"unhealthy sidecar restarts even under Never", newPod(inits("side"), policy(v1.RestartPolicyNever)), fakeProbes{unhealthy: map[string]string{"s1": "liveness"}}, nil,
			cs(ctr("s1", "side", "sb", running, 0, 0)), view{SandboxID: "sb", Kill: []string{"s1(side)"}, Start: []string{"init:side/1"}},
			"Container side failed liveness probe, will be restarted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ComputeWithProbes(tt.pod, status(sbs(ready("sb", 0)), tt.cs...), tt.backoff, tt.probes, t0)
			if got := project(a); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("plan = %+v\nwant   %+v", got, tt.want)
			}
			for _, k := range a.ContainersToKill {
				if k.Message != tt.msg {
					t.Fatalf("kill message %q, want %q", k.Message, tt.msg)
				}
			}
		})
	}
}

func TestProbeGrace(t *testing.T) {
	g := int64(3)
	pod := newPod()
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &g}
	if got := probeGrace(pod, &pod.Spec.Containers[0], "liveness"); got == nil || *got != 3 {
		t.Fatalf("liveness grace = %v, want 3", got)
	}
	if got := probeGrace(pod, &pod.Spec.Containers[0], "startup"); got != nil {
		t.Fatalf("startup grace = %v, want nil (no startup probe)", *got)
	}
	d := int64(1)
	pod.DeletionGracePeriodSeconds = &d
	if got := probeGrace(pod, &pod.Spec.Containers[0], "liveness"); got != nil {
		t.Fatalf("deleting pod: grace = %v, want the deletion's", *got)
	}
}
