package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// fakeProbes: instance "<name>-id" is started unless in notStarted, ready
// unless in notReady.
type fakeProbes struct{ notStarted, notReady map[string]bool }

func (f fakeProbes) Started(name, id string) bool { return !f.notStarted[name] }
func (f fakeProbes) Ready(name, id string) bool   { return !f.notReady[name] }

func findCond(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestGenerateReadiness(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	withSidecar := specPod(v1.RestartPolicyAlways, "a")
	withSidecar.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &always}}
	gated := func(status v1.ConditionStatus) *v1.Pod {
		p := specPod(v1.RestartPolicyAlways, "a")
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		if status != "" {
			p.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: status}}
		}
		return p
	}
	deleting := specPod(v1.RestartPolicyAlways, "a")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}

	tests := []struct {
		name                 string
		pod                  *v1.Pod
		containers           []*runtime.ContainerStatus
		probes               ProbeResults
		wantStarted, wantRdy bool
		wantCR, wantReady    v1.ConditionStatus
		wantReason, wantMsg  string
	}{
		{"no probes: ready", specPod(v1.RestartPolicyAlways, "a"), []*runtime.ContainerStatus{running("a", 0)}, nil,
			true, true, v1.ConditionTrue, v1.ConditionTrue, "", ""},
		{"readiness failing", specPod(v1.RestartPolicyAlways, "a"), []*runtime.ContainerStatus{running("a", 0)},
			fakeProbes{notReady: map[string]bool{"a": true}},
			true, false, v1.ConditionFalse, v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"},
		{"startup pending: not started, not ready", specPod(v1.RestartPolicyAlways, "a"), []*runtime.ContainerStatus{running("a", 0)},
			fakeProbes{notStarted: map[string]bool{"a": true}},
			false, false, v1.ConditionFalse, v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"},
		{"terminating pod is not ready", deleting, []*runtime.ContainerStatus{running("a", 0)}, nil,
			true, false, v1.ConditionFalse, v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"},
		{"unready sidecar", withSidecar, []*runtime.ContainerStatus{running("a", 0), running("side", 0)},
			fakeProbes{notReady: map[string]bool{"side": true}},
			true, true, v1.ConditionFalse, v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [side]"},
		{"readiness gate missing", gated(""), []*runtime.ContainerStatus{running("a", 0)}, nil,
			true, true, v1.ConditionTrue, v1.ConditionFalse, "ReadinessGatesNotReady",
			`corresponding condition of pod readiness gate "example.com/lb" does not exist.`},
		{"readiness gate false", gated(v1.ConditionFalse), []*runtime.ContainerStatus{running("a", 0)}, nil,
			true, true, v1.ConditionTrue, v1.ConditionFalse, "ReadinessGatesNotReady",
			`the status of pod readiness gate "example.com/lb" is not "True", but False`},
		{"readiness gate true", gated(v1.ConditionTrue), []*runtime.ContainerStatus{running("a", 0)}, nil,
			true, true, v1.ConditionTrue, v1.ConditionTrue, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(Input{Pod: tc.pod, Runtime: &runtime.PodStatus{Sandboxes: readySandbox(), Containers: tc.containers},
				Probes: tc.probes, Now: t0})
			a := s.ContainerStatuses[0]
			if *a.Started != tc.wantStarted || a.Ready != (tc.wantRdy && tc.pod.DeletionTimestamp == nil) {
				t.Errorf("container a: started %v ready %v", *a.Started, a.Ready)
			}
			cr, ready := findCond(s, v1.ContainersReady), findCond(s, v1.PodReady)
			if cr.Status != tc.wantCR || ready.Status != tc.wantReady || ready.Reason != tc.wantReason || ready.Message != tc.wantMsg {
				t.Errorf("ContainersReady %s; Ready %s %q %q; want %s; %s %q %q", cr.Status, ready.Status, ready.Reason, ready.Message,
					tc.wantCR, tc.wantReady, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

func TestGenerateTerminalNotReady(t *testing.T) {
	s := Generate(Input{Pod: specPod(v1.RestartPolicyNever, "a"),
		Runtime: &runtime.PodStatus{Sandboxes: readySandbox(), Containers: []*runtime.ContainerStatus{exited("a", 0, 0)}}, Now: t0})
	if c := findCond(s, v1.PodReady); c.Status != v1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Fatalf("Ready of a succeeded pod: %+v", c)
	}
}

func TestReadinessGatesChanged(t *testing.T) {
	pod := specPod(v1.RestartPolicyAlways, "a")
	if ReadinessGatesChanged(pod) {
		t.Fatal("no gates: never changed")
	}
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "x"}}
	pod.Status.Conditions = []v1.PodCondition{
		{Type: v1.ContainersReady, Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: "x", Status: v1.ConditionFalse},
	}
	if ReadinessGatesChanged(pod) {
		t.Fatal("gate false and pod not ready: nothing changed")
	}
	pod.Status.Conditions[2].Status = v1.ConditionTrue
	if !ReadinessGatesChanged(pod) {
		t.Fatal("gate turned true: the pod must be synced")
	}
}
