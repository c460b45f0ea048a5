package apistatus

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 5, 123456789, time.UTC))
)

func cond(t v1.PodConditionType, s v1.ConditionStatus, at metav1.Time) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s, LastTransitionTime: at}
}

func TestMerge(t *testing.T) {
	running := v1.PodStatus{
		Phase:     v1.PodRunning,
		StartTime: &t1,
		Conditions: []v1.PodCondition{
			cond(v1.PodReady, v1.ConditionTrue, t1),
			cond(v1.PodScheduled, v1.ConditionTrue, t1),
		},
	}
	tests := []struct {
		name   string
		base   v1.PodStatus
		want   func(*v1.PodStatus)
		wantOK bool
	}{
		{name: "fresh pod", base: v1.PodStatus{Phase: v1.PodPending}, wantOK: true},
		{
			name: "start time the API has wins", wantOK: true,
			base: v1.PodStatus{Phase: v1.PodRunning, StartTime: &t0},
			want: func(s *v1.PodStatus) { s.StartTime = &t0 },
		},
		{
			name: "unchanged condition keeps its transition time", wantOK: true,
			base: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				cond(v1.PodReady, v1.ConditionTrue, t0), cond(v1.PodScheduled, v1.ConditionFalse, t0)}},
			want: func(s *v1.PodStatus) { s.Conditions[0].LastTransitionTime = t0 },
		},
		{
			name: "others' conditions kept after the node's", wantOK: true,
			base: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				cond("example.com/gate", v1.ConditionTrue, t0), cond(v1.ContainersReady, v1.ConditionFalse, t0)}},
			want: func(s *v1.PodStatus) {
				s.Conditions = append(s.Conditions, cond("example.com/gate", v1.ConditionTrue, t0))
			},
		},
		{
			name: "terminal phase is never left",
			base: v1.PodStatus{Phase: v1.PodSucceeded},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := running.DeepCopy()
			got, ok := Merge(tc.base, *desired)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v", ok)
			}
			if !equality.Semantic.DeepEqual(*desired, running) {
				t.Fatal("Merge modified desired")
			}
			if !ok {
				return
			}
			want := running.DeepCopy()
			if tc.want != nil {
				tc.want(want)
			}
			if !equality.Semantic.DeepEqual(got, *want) {
				t.Fatalf("got  %+v\nwant %+v", got, *want)
			}
		})
	}
}

func TestPatch(t *testing.T) {
	base := v1.PodStatus{Phase: v1.PodRunning, StartTime: &t0, PodIP: "10.88.0.5",
		Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse, t0)}}
	base.Conditions[0].Reason = "ContainersNotReady"

	// The API keeps seconds: nanoseconds alone are no change.
	sameButNanos := base.DeepCopy()
	nanos := metav1.NewTime(t0.Add(999 * time.Millisecond))
	sameButNanos.StartTime = &nanos
	if p, err := Patch("u1", base, *sameButNanos); err != nil || p != nil {
		t.Fatalf("patch for an equal status = %s, %v", p, err)
	}

	ready := base.DeepCopy()
	ready.Conditions[0] = cond(v1.PodReady, v1.ConditionTrue, t1)
	p, err := Patch("u1", base, *ready)
	if err != nil || p == nil {
		t.Fatalf("no patch for a change: %v", err)
	}
	s := string(p)
	for _, want := range []string{`"uid":"u1"`, `"status":"True"`, `"reason":null`} {
		if !strings.Contains(s, want) {
			t.Errorf("patch %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, "podIP") {
		t.Errorf("patch %s carries an unchanged field", s)
	}
}
