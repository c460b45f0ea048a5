package agent

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/security"
	"github.com/nodelet/nodelet/pkg/status"
)

// TestCriticalPodPreempts: a critical (static) pod refused for want of
// resources is admitted once the pods Preempt chose are stopping; they are
// marked Preempting and no longer count. A refusal preemption cannot cure
// stands, and nothing is stopped for it.
func TestCriticalPodPreempts(t *testing.T) {
	events := record.NewFakeRecorder(10)
	fits := func(active []*v1.Pod) bool {
		for _, o := range active {
			if o.Name == "victim" {
				return false
			}
		}
		return true
	}
	preemptErr := error(nil)
	a := mustNew(t, Config{}, Deps{Runtime: newFakeRuntime(), Relister: &fakeRelister{}, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Recorder: events,
		Admit: func(p *v1.Pod, active []*v1.Pod) *security.Rejection {
			switch {
			case p.Name == "ports":
				return &security.Rejection{Reason: "NodePorts", Message: "no"}
			case p.Name != "victim" && !fits(active):
				return &security.Rejection{Reason: "OutOfmemory", Message: "no"}
			}
			return nil
		},
		Preempt: func(p *v1.Pod, active []*v1.Pod) ([]*v1.Pod, error) {
			if preemptErr != nil {
				return nil, preemptErr
			}
			for _, o := range active {
				if o.Name == "victim" {
					return []*v1.Pod{o}, nil
				}
			}
			return nil, errors.New("none")
		}})
	victim := staticPod("victim")
	a.pods.AddOrUpdatePod(victim)
	if !a.admitted(victim, true) {
		t.Fatal("victim refused")
	}
	ports := staticPod("ports")
	a.pods.AddOrUpdatePod(ports)
	if a.admitted(ports, true) || a.shutdowns.get(victim.UID) != nil {
		t.Fatal("a non-resource refusal preempted")
	}
	preemptErr = errors.New("no set of running pods found")
	first := staticPod("first")
	a.pods.AddOrUpdatePod(first)
	if a.admitted(first, true) || a.shutdowns.get(victim.UID) != nil {
		t.Fatal("admitted though preemption failed")
	}
	preemptErr = nil
	crit := staticPod("crit")
	a.pods.AddOrUpdatePod(crit)
	if !a.admitted(crit, true) {
		t.Fatal("critical pod refused")
	}
	s := a.shutdowns.get(victim.UID)
	if s == nil || s.why != "preemption" {
		t.Fatalf("victim not stopping: %+v", s)
	}
	var st v1.PodStatus
	s.mark(&st)
	if st.Phase != v1.PodFailed || st.Reason != "Preempting" || st.Message != "Preempted in order to admit critical pod" ||
		len(st.Conditions) != 1 || st.Conditions[0].Type != v1.DisruptionTarget {
		t.Errorf("preempted status %+v", st)
	}
	for _, o := range a.activePods("") {
		if o.Name == "victim" {
			t.Error("a preempted pod still counts at admission")
		}
	}
	var got []string
	for len(events.Events) > 0 {
		got = append(got, <-events.Events)
	}
	if !strings.Contains(strings.Join(got, "\n"), "Warning Preempting Preempted in order to admit critical pod") {
		t.Errorf("events %q", got)
	}
}
