package node

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNeedsStatusPatch(t *testing.T) {
	cfg := testConfig()
	old := DesiredStatus(cfg, healthyFacts(), v1.NodeStatus{}, t0)
	// What the API server returns: quantities re-parsed, times truncated to
	// seconds. Neither may count as a change.
	roundTrip := func(st v1.NodeStatus) v1.NodeStatus {
		st = *st.DeepCopy()
		for k, v := range st.Capacity {
			st.Capacity[k] = resource.MustParse(v.String())
		}
		for i := range st.Conditions {
			st.Conditions[i].LastTransitionTime = metav1.NewTime(st.Conditions[i].LastTransitionTime.Rfc3339Copy().Time)
		}
		return st
	}
	apiOld := roundTrip(old)
	later := t0.Add(10 * time.Second)

	notReady := healthyFacts()
	notReady.RuntimeErrors = []string{"down"}
	newImage := healthyFacts()
	newImage.Images = append(newImage.Images, v1.ContainerImage{Names: []string{"x"}, SizeBytes: 1})

	tests := []struct {
		name       string
		desired    v1.NodeStatus
		lastReport time.Time
		now        time.Time
		want       bool
	}{
		{"unchanged, only heartbeats moved", DesiredStatus(cfg, healthyFacts(), apiOld, later), t0, later, false},
		{"never reported", DesiredStatus(cfg, healthyFacts(), apiOld, later), time.Time{}, later, true},
		{"report period over", DesiredStatus(cfg, healthyFacts(), apiOld, t0.Add(5*time.Minute)), t0, t0.Add(5 * time.Minute), true},
		{"just under the report period", DesiredStatus(cfg, healthyFacts(), apiOld, t0.Add(5*time.Minute-time.Second)), t0, t0.Add(5*time.Minute - time.Second), false},
		{"ready changed", DesiredStatus(cfg, notReady, apiOld, later), t0, later, true},
		{"images changed", DesiredStatus(cfg, newImage, apiOld, later), t0, later, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsStatusPatch(apiOld, tt.desired, tt.lastReport, tt.now, 5*time.Minute); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConditionEvents(t *testing.T) {
	c := func(typ v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: typ, Status: s}
	}
	tests := []struct {
		name     string
		old, new []v1.NodeCondition
		want     []string
	}{
		{"first report announces every condition",
			nil,
			[]v1.NodeCondition{c(v1.NodeMemoryPressure, "False"), c(v1.NodeDiskPressure, "False"), c(v1.NodePIDPressure, "False"), c(v1.NodeReady, "True")},
			[]string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"}},
		{"nothing changed",
			[]v1.NodeCondition{c(v1.NodeReady, "True")}, []v1.NodeCondition{c(v1.NodeReady, "True")}, nil},
		{"not ready, disk pressure",
			[]v1.NodeCondition{c(v1.NodeDiskPressure, "False"), c(v1.NodeReady, "True")},
			[]v1.NodeCondition{c(v1.NodeDiskPressure, "True"), c(v1.NodeReady, "False")},
			[]string{"NodeHasDiskPressure", "NodeNotReady"}},
		{"unknown to ready, foreign conditions ignored",
			[]v1.NodeCondition{c(v1.NodeReady, "Unknown"), c("KernelDeadlock", "False")},
			[]v1.NodeCondition{c(v1.NodeReady, "True"), c("KernelDeadlock", "True"), c(v1.NodeMemoryPressure, "True"), c(v1.NodePIDPressure, "True")},
			[]string{"NodeReady", "NodeHasInsufficientMemory", "NodeHasInsufficientPID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range ConditionEvents("n1", tt.old, tt.new) {
				if e.Type != v1.EventTypeNormal || e.Message != "Node n1 status is now: "+e.Reason {
					t.Errorf("event %+v", e)
				}
				got = append(got, e.Reason)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("reasons %v, want %v", got, tt.want)
			}
		})
	}
}
