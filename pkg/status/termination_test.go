package status

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func TestActiveDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := metav1.NewTime(t0)
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name     string
		deadline *int64
		start    *metav1.Time
		now      time.Time
		exceeded bool
		left     time.Duration
	}{
		{name: "no deadline", start: &start, now: t0.Add(time.Hour)},
		{name: "not started", deadline: secs(5), now: t0.Add(time.Hour)},
		{name: "before", deadline: secs(5), start: &start, now: t0.Add(2 * time.Second), left: 3 * time.Second},
		{name: "at", deadline: secs(5), start: &start, now: t0.Add(5 * time.Second), exceeded: true},
		{name: "after", deadline: secs(5), start: &start, now: t0.Add(time.Minute), exceeded: true},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: tc.deadline}}
		exceeded, left := ActiveDeadline(pod, tc.start, tc.now)
		if exceeded != tc.exceeded || left != tc.left {
			t.Errorf("%s: got %v %s, want %v %s", tc.name, exceeded, left, tc.exceeded, tc.left)
		}
	}
}

func TestGenerateFailedReasonSticks(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "a"}}}}
	rs := &runtime.PodStatus{Containers: []*runtime.ContainerStatus{{ID: "1", Name: "a", State: runtime.ContainerStateExited, ExitCode: 137}}}
	in := Input{Pod: pod, Runtime: rs, Now: time.Now(), FailedReason: ReasonDeadlineExceeded, FailedMessage: MessageDeadlineExceeded}
	s := Generate(in)
	if s.Phase != v1.PodFailed || s.Reason != ReasonDeadlineExceeded || s.Message != MessageDeadlineExceeded {
		t.Fatalf("phase %s reason %q message %q", s.Phase, s.Reason, s.Message)
	}
	// Later statuses keep the terminal phase and its reason.
	next := Generate(Input{Pod: pod, Runtime: rs, Now: time.Now(), Previous: &s})
	if next.Phase != v1.PodFailed || next.Reason != ReasonDeadlineExceeded {
		t.Errorf("next: phase %s reason %q", next.Phase, next.Reason)
	}
}

func TestTerminationMessagesShareThePodBudget(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever}}
	rs := &runtime.PodStatus{}
	for _, n := range []string{"a", "b", "c", "d"} {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n})
		rs.Containers = append(rs.Containers, &runtime.ContainerStatus{ID: n, Name: n, State: runtime.ContainerStateExited,
			Message: strings.Repeat(n, 4096)})
	}
	rs.Containers[0].Message = "short"
	s := Generate(Input{Pod: pod, Runtime: rs, Now: time.Now()})
	total := 0
	for _, cs := range s.ContainerStatuses {
		m := cs.State.Terminated.Message
		total += len(m)
		if cs.Name == "a" && m != "short" {
			t.Errorf("a: %q", m)
		}
		if cs.Name != "a" && len(m) != 3072 {
			t.Errorf("%s: %d bytes, want 3072 (12 KiB / 4)", cs.Name, len(m))
		}
	}
	if total > 12<<10 {
		t.Errorf("total %d bytes", total)
	}
}

func TestReadyToStartContainers(t *testing.T) {
	ready := &runtime.SandboxStatus{State: runtime.SandboxStateReady}
	withIP := &runtime.SandboxStatus{State: runtime.SandboxStateReady, IP: "10.88.0.2"}
	dead := &runtime.SandboxStatus{State: runtime.SandboxStateNotReady, IP: "10.88.0.2"}
	for _, tc := range []struct {
		name    string
		host    bool
		sandbox *runtime.SandboxStatus
		want    bool
	}{
		{name: "no sandbox"},
		{name: "pod network with IP", sandbox: withIP, want: true},
		{name: "pod network without IP yet", sandbox: ready},
		{name: "host network", host: true, sandbox: ready, want: true},
		{name: "sandbox not ready", sandbox: dead},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.host}}
		rs := &runtime.PodStatus{}
		if tc.sandbox != nil {
			rs.Sandboxes = []*runtime.SandboxStatus{tc.sandbox}
		}
		if got := readyToStartContainers(pod, rs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
