package shutdown

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func testPod(name string, prio *int32, grace *int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       v1.PodSpec{Priority: prio, TerminationGracePeriodSeconds: grace},
	}
}

func TestGroups(t *testing.T) {
	tests := []struct {
		name            string
		grace, critical time.Duration
		want            []Group
		wantErr         bool
	}{
		{name: "disabled", grace: 0, critical: 0, want: nil},
		{name: "split", grace: 30 * time.Second, critical: 10 * time.Second,
			want: []Group{{MinPriority: 0, Grace: 20 * time.Second}, {MinPriority: CriticalPriority, Grace: 10 * time.Second}}},
		{name: "zero critical period", grace: 30 * time.Second, critical: 0,
			want: []Group{{MinPriority: 0, Grace: 30 * time.Second}, {MinPriority: CriticalPriority, Grace: 0}}},
		{name: "all for critical", grace: 30 * time.Second, critical: 30 * time.Second,
			want: []Group{{MinPriority: 0, Grace: 0}, {MinPriority: CriticalPriority, Grace: 30 * time.Second}}},
		{name: "critical above total", grace: 10 * time.Second, critical: 20 * time.Second, wantErr: true},
		{name: "critical without total", grace: 0, critical: 5 * time.Second, wantErr: true},
		{name: "negative", grace: -time.Second, critical: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Groups(tt.grace, tt.critical)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].MinPriority != tt.want[i].MinPriority || got[i].Grace != tt.want[i].Grace {
					t.Errorf("group %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestAssignCriticalLast(t *testing.T) {
	groups, err := Groups(30*time.Second, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Given highest priority first, to show the order comes from the
	// groups, not from the pod list.
	pods := []*v1.Pod{
		testPod("node-critical", ptr(int32(2000001000)), nil),
		testPod("cluster-critical", ptr(int32(2000000000)), nil),
		testPod("just-below", ptr(int32(1999999999)), nil),
		testPod("high", ptr(int32(1000)), nil),
		testPod("none", nil, nil),
		testPod("negative", ptr(int32(-5)), nil),
	}
	// Reversed groups must not change the order either.
	got := Assign([]Group{groups[1], groups[0]}, pods)
	want := [][]string{
		{"just-below", "high", "none", "negative"},
		{"node-critical", "cluster-critical"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d groups, want %d", len(got), len(want))
	}
	if got[0].MinPriority != 0 || got[1].MinPriority != CriticalPriority {
		t.Fatalf("groups not lowest priority first: %+v", got)
	}
	for i, g := range got {
		var names []string
		for _, p := range g.Pods {
			names = append(names, p.Name)
		}
		if len(names) != len(want[i]) {
			t.Fatalf("group %d = %v, want %v", i, names, want[i])
		}
		for j := range names {
			if names[j] != want[i][j] {
				t.Errorf("group %d = %v, want %v", i, names, want[i])
			}
		}
	}
	if groups[0].Pods != nil || groups[1].Pods != nil {
		t.Error("Assign changed its input groups")
	}
}

func TestPodGrace(t *testing.T) {
	tests := []struct {
		name  string
		own   *int64
		group time.Duration
		want  int64
	}{
		{name: "pod shorter", own: ptr(int64(5)), group: 20 * time.Second, want: 5},
		{name: "group shorter", own: ptr(int64(60)), group: 20 * time.Second, want: 20},
		{name: "equal", own: ptr(int64(20)), group: 20 * time.Second, want: 20},
		{name: "pod unset", own: nil, group: 20 * time.Second, want: 20},
		{name: "zero group period", own: ptr(int64(30)), group: 0, want: 0},
		{name: "pod zero", own: ptr(int64(0)), group: 20 * time.Second, want: 0},
		{name: "negative pod period", own: ptr(int64(-3)), group: 20 * time.Second, want: 0},
		{name: "fractional group period rounds down", own: nil, group: 1500 * time.Millisecond, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodGrace(testPod("p", nil, tt.own), tt.group); got != tt.want {
				t.Errorf("PodGrace = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMarkTerminated(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		phase     v1.PodPhase
		wantPhase v1.PodPhase
	}{
		{name: "running", phase: v1.PodRunning, wantPhase: v1.PodFailed},
		{name: "pending", phase: v1.PodPending, wantPhase: v1.PodFailed},
		{name: "succeeded stays", phase: v1.PodSucceeded, wantPhase: v1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &v1.PodStatus{Phase: tt.phase, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
			MarkTerminated(st, now)
			MarkTerminated(st, now.Add(time.Minute)) // idempotent, keeps the transition time
			if st.Phase != tt.wantPhase || st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." {
				t.Errorf("status = %s %q %q", st.Phase, st.Reason, st.Message)
			}
			if len(st.Conditions) != 2 {
				t.Fatalf("conditions = %+v", st.Conditions)
			}
			c := st.Conditions[1]
			if c.Type != v1.DisruptionTarget || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet || !c.LastTransitionTime.Time.Equal(now) {
				t.Errorf("DisruptionTarget condition = %+v", c)
			}
		})
	}
}
