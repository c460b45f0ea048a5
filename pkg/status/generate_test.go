package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func specPod(policy v1.RestartPolicy, names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	p.Spec.RestartPolicy = policy
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func running(name string, restarts int) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{ID: name + "-id", Name: name, State: runtime.ContainerStateRunning, StartedAt: t0, RestartCount: restarts}
}

func exited(name string, code int32, restarts int) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{ID: name + "-x", Name: name, State: runtime.ContainerStateExited, ExitCode: code, StartedAt: t0, FinishedAt: t0.Add(time.Second), RestartCount: restarts}
}

func readySandbox() []*runtime.SandboxStatus {
	return []*runtime.SandboxStatus{{ID: "sb", State: runtime.SandboxStateReady, IP: "10.88.0.5"}}
}

func TestGeneratePhase(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		containers []*runtime.ContainerStatus
		waiting    map[string]runtime.ContainerWaiting
		want       v1.PodPhase
		wantReady  bool
	}{
		{"nothing yet", specPod(v1.RestartPolicyAlways, "a"), nil, nil, v1.PodPending, false},
		{"all running", specPod(v1.RestartPolicyAlways, "a", "b"), []*runtime.ContainerStatus{running("a", 0), running("b", 0)}, nil, v1.PodRunning, true},
		{"one not started", specPod(v1.RestartPolicyAlways, "a", "b"), []*runtime.ContainerStatus{running("a", 0)}, nil, v1.PodPending, false},
		{"never: all succeeded", specPod(v1.RestartPolicyNever, "a"), []*runtime.ContainerStatus{exited("a", 0, 0)}, nil, v1.PodSucceeded, false},
		{"never: one failed", specPod(v1.RestartPolicyNever, "a", "b"), []*runtime.ContainerStatus{exited("a", 0, 0), exited("b", 1, 0)}, nil, v1.PodFailed, false},
		{"onfailure: failed restarts", specPod(v1.RestartPolicyOnFailure, "a"), []*runtime.ContainerStatus{exited("a", 1, 0)}, nil, v1.PodRunning, false},
		{"onfailure: succeeded", specPod(v1.RestartPolicyOnFailure, "a"), []*runtime.ContainerStatus{exited("a", 0, 0)}, nil, v1.PodSucceeded, false},
		{"always: exited stays running", specPod(v1.RestartPolicyAlways, "a"), []*runtime.ContainerStatus{exited("a", 0, 0)}, nil, v1.PodRunning, false},
		{"crash loop waiting", specPod(v1.RestartPolicyAlways, "a"), []*runtime.ContainerStatus{exited("a", 1, 3)},
			map[string]runtime.ContainerWaiting{"a": {Reason: "CrashLoopBackOff"}}, v1.PodRunning, false},
		{"image pull error", specPod(v1.RestartPolicyAlways, "a"), nil,
			map[string]runtime.ContainerWaiting{"a": {Reason: "ErrImagePull"}}, v1.PodPending, false},
	}
	for _, tc := range tests {
		s := Generate(Input{Pod: tc.pod, Runtime: &runtime.PodStatus{Sandboxes: readySandbox(), Containers: tc.containers},
			Waiting: tc.waiting, HostIP: "192.0.2.1", Now: t0})
		if s.Phase != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, s.Phase, tc.want)
		}
		var ready bool
		for _, c := range s.Conditions {
			if c.Type == v1.PodReady {
				ready = c.Status == v1.ConditionTrue
			}
		}
		if ready != tc.wantReady {
			t.Errorf("%s: ready %v, want %v", tc.name, ready, tc.wantReady)
		}
	}
}

func TestGenerateContainerStatus(t *testing.T) {
	pod := specPod(v1.RestartPolicyAlways, "a")
	rs := &runtime.PodStatus{Sandboxes: readySandbox(), Containers: []*runtime.ContainerStatus{
		exited("a", 2, 1), exited("a", 1, 0),
	}}
	s := Generate(Input{Pod: pod, Runtime: rs, Now: t0,
		Waiting: map[string]runtime.ContainerWaiting{"a": {Reason: "CrashLoopBackOff", Message: "back-off 10s"}}})
	cs := s.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
		t.Fatalf("state %+v", cs.State)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 2 {
		t.Fatalf("last state %+v", cs.LastTerminationState)
	}
	if cs.RestartCount != 1 || cs.ContainerID != "containerd://a-x" {
		t.Fatalf("restart %d id %s", cs.RestartCount, cs.ContainerID)
	}
	if s.PodIP != "10.88.0.5" {
		t.Fatalf("pod IP %q", s.PodIP)
	}

	// Without a waiting reason the exited instance is the current state and
	// the one before it the last termination.
	s = Generate(Input{Pod: pod, Runtime: rs, Now: t0})
	cs = s.ContainerStatuses[0]
	if cs.State.Terminated == nil || cs.State.Terminated.Reason != "Error" || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("state %+v last %+v", cs.State, cs.LastTerminationState)
	}
}

func TestGenerateKeepsStartTimeAndTransitions(t *testing.T) {
	pod := specPod(v1.RestartPolicyAlways, "a")
	rs := &runtime.PodStatus{Sandboxes: readySandbox(), Containers: []*runtime.ContainerStatus{running("a", 0)}}
	first := Generate(Input{Pod: pod, Runtime: rs, Now: t0})
	second := Generate(Input{Pod: pod, Runtime: rs, Previous: &first, Now: t0.Add(time.Minute)})
	if !second.StartTime.Equal(first.StartTime) {
		t.Fatalf("start time moved")
	}
	for i := range second.Conditions {
		if !second.Conditions[i].LastTransitionTime.Equal(&first.Conditions[i].LastTransitionTime) {
			t.Fatalf("condition %s transition moved", second.Conditions[i].Type)
		}
	}
	pod.Spec.HostNetwork = true
	s := Generate(Input{Pod: pod, Runtime: rs, HostIP: "192.0.2.1", Now: t0})
	if s.PodIP != "192.0.2.1" {
		t.Fatalf("host network pod IP %q", s.PodIP)
	}
	term := Generate(Input{Pod: pod, Runtime: rs, Previous: &v1.PodStatus{Phase: v1.PodSucceeded}, Now: t0})
	if term.Phase != v1.PodSucceeded {
		t.Fatalf("left terminal phase: %s", term.Phase)
	}
}

func TestQOSClass(t *testing.T) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	guaranteed := v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")},
		Requests: v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")},
	}
	burst := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("100m")}}
	tests := []struct {
		res  []v1.ResourceRequirements
		want v1.PodQOSClass
	}{
		{[]v1.ResourceRequirements{{}}, v1.PodQOSBestEffort},
		{[]v1.ResourceRequirements{guaranteed}, v1.PodQOSGuaranteed},
		{[]v1.ResourceRequirements{burst}, v1.PodQOSBurstable},
		{[]v1.ResourceRequirements{guaranteed, {}}, v1.PodQOSBurstable},
		// Only CPU and memory count, as upstream.
		{[]v1.ResourceRequirements{{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: q("1Gi")}}}, v1.PodQOSBestEffort},
		// A request left out beside its limit is defaulted to it.
		{[]v1.ResourceRequirements{{Limits: guaranteed.Limits}}, v1.PodQOSGuaranteed},
		{[]v1.ResourceRequirements{{Limits: v1.ResourceList{v1.ResourceCPU: q("1")}}}, v1.PodQOSBurstable},
	}
	for i, tc := range tests {
		p := &v1.Pod{}
		for _, r := range tc.res {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Resources: r})
		}
		if got := QOSClass(p); got != tc.want {
			t.Errorf("%d: %s, want %s", i, got, tc.want)
		}
	}
	// Pod-level resources decide alone.
	p := &v1.Pod{Spec: v1.PodSpec{Resources: &guaranteed, Containers: []v1.Container{{}}}}
	if got := QOSClass(p); got != v1.PodQOSGuaranteed {
		t.Errorf("pod-level guaranteed: %s", got)
	}
}

func TestGenerateKilledIsTerminal(t *testing.T) {
	pod := specPod(v1.RestartPolicyAlways, "a", "b")
	tests := []struct {
		containers []*runtime.ContainerStatus
		want       v1.PodPhase
	}{
		{[]*runtime.ContainerStatus{exited("a", 0, 0), exited("b", 0, 0)}, v1.PodSucceeded},
		{[]*runtime.ContainerStatus{exited("a", 0, 0), exited("b", 137, 0)}, v1.PodFailed},
		{[]*runtime.ContainerStatus{exited("a", 0, 0)}, v1.PodFailed},
	}
	for i, tc := range tests {
		s := Generate(Input{Pod: pod, Runtime: &runtime.PodStatus{Containers: tc.containers}, Killed: true, Now: t0})
		if s.Phase != tc.want {
			t.Errorf("%d: phase %s, want %s", i, s.Phase, tc.want)
		}
	}
}

// TestGenerateInitContainers: upstream's view of a pod with init
// containers: containers not yet created wait with PodInitializing, a
// completed init container is ready, and Initialized names the init
// containers not done until an app container has run.
func TestGenerateInitContainers(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := specPod(v1.RestartPolicyAlways, "app")
	pod.Spec.InitContainers = []v1.Container{{Name: "init1"}, {Name: "side", RestartPolicy: &always}, {Name: "init2"}}
	initCond := func(s v1.PodStatus) v1.PodCondition {
		for _, c := range s.Conditions {
			if c.Type == v1.PodInitialized {
				return c
			}
		}
		return v1.PodCondition{}
	}
	tests := []struct {
		name       string
		containers []*runtime.ContainerStatus
		wantReady  map[string]bool
		wantWait   map[string]string // container -> waiting reason
		wantInit   v1.ConditionStatus
		wantMsg    string
	}{
		{"nothing yet", nil, map[string]bool{},
			map[string]string{"init1": "PodInitializing", "side": "PodInitializing", "init2": "PodInitializing", "app": "PodInitializing"},
			v1.ConditionFalse, "containers with incomplete status: [init1 side init2]"},
		{"init1 done, sidecar running", []*runtime.ContainerStatus{exited("init1", 0, 0), running("side", 0)},
			map[string]bool{"init1": true, "side": true}, map[string]string{"init2": "PodInitializing", "app": "PodInitializing"},
			v1.ConditionFalse, "containers with incomplete status: [init2]"},
		{"init1 running", []*runtime.ContainerStatus{running("init1", 0)},
			map[string]bool{"init1": false}, map[string]string{"side": "PodInitializing", "app": "PodInitializing"},
			v1.ConditionFalse, "containers with incomplete status: [init1 side init2]"},
		{"init1 failed", []*runtime.ContainerStatus{exited("init1", 1, 0)},
			map[string]bool{"init1": false}, map[string]string{"app": "PodInitializing"},
			v1.ConditionFalse, "containers with incomplete status: [init1 side init2]"},
		{"all done, app running", []*runtime.ContainerStatus{exited("init1", 0, 0), running("side", 0), exited("init2", 0, 0), running("app", 0)},
			map[string]bool{"init1": true, "side": true, "init2": true, "app": true}, nil, v1.ConditionTrue, ""},
		{"sidecar restarting after init", []*runtime.ContainerStatus{exited("init1", 0, 0), exited("side", 1, 0), exited("init2", 0, 0), running("app", 0)},
			map[string]bool{"side": false, "app": true}, nil, v1.ConditionTrue, ""},
	}
	for _, tc := range tests {
		s := Generate(Input{Pod: pod, Runtime: &runtime.PodStatus{Sandboxes: readySandbox(), Containers: tc.containers}, Now: t0})
		all := append(append([]v1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...)
		for _, cs := range all {
			if want, ok := tc.wantReady[cs.Name]; ok && cs.Ready != want {
				t.Errorf("%s: %s ready %v, want %v", tc.name, cs.Name, cs.Ready, want)
			}
			if want, ok := tc.wantWait[cs.Name]; ok && (cs.State.Waiting == nil || cs.State.Waiting.Reason != want) {
				t.Errorf("%s: %s state %+v, want waiting %s", tc.name, cs.Name, cs.State, want)
			}
			if cs.Started == nil {
				t.Errorf("%s: %s has no started", tc.name, cs.Name)
			}
		}
		if c := initCond(s); c.Status != tc.wantInit || c.Message != tc.wantMsg {
			t.Errorf("%s: Initialized %s %q, want %s %q", tc.name, c.Status, c.Message, tc.wantInit, tc.wantMsg)
		}
	}
	// Without init containers a container not yet created is ContainerCreating.
	s := Generate(Input{Pod: specPod(v1.RestartPolicyAlways, "a"), Runtime: &runtime.PodStatus{Sandboxes: readySandbox()}, Now: t0})
	if w := s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Errorf("no init containers: %+v, want waiting ContainerCreating", s.ContainerStatuses[0].State)
	}
}

// TestGenerateObservedGeneration: the status and each of its conditions
// carry the generation of the spec they were made from.
func TestGenerateObservedGeneration(t *testing.T) {
	pod := specPod(v1.RestartPolicyAlways, "a")
	pod.Generation = 3
	s := Generate(Input{Pod: pod, Runtime: &runtime.PodStatus{Sandboxes: readySandbox()}, Now: t0})
	if s.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", s.ObservedGeneration)
	}
	for _, c := range s.Conditions {
		if c.ObservedGeneration != 3 {
			t.Errorf("condition %s observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
}

// TestGenerateEphemeral: ephemeral containers are reported like app
// containers but never ready, with restart count 0, and do not change the
// pod's phase or readiness.
func TestGenerateEphemeral(t *testing.T) {
	withImage := func(c *runtime.ContainerStatus) *runtime.ContainerStatus {
		c.Image, c.ImageRef = "docker.io/library/busybox:1.35", "sha256:bb"
		return c
	}
	tests := []struct {
		name      string
		policy    v1.RestartPolicy
		ctrs      []*runtime.ContainerStatus
		waiting   map[string]runtime.ContainerWaiting
		check     func(v1.ContainerStatus) bool
		wantPhase v1.PodPhase
		wantReady bool
	}{
		{
			name: "not created yet", policy: v1.RestartPolicyAlways, ctrs: []*runtime.ContainerStatus{running("a", 0)},
			check: func(es v1.ContainerStatus) bool {
				return es.State.Waiting != nil && es.State.Waiting.Reason == "ContainerCreating" && es.ContainerID == "" &&
					es.Image == "busybox" && es.Started != nil && !*es.Started
			},
			wantPhase: v1.PodRunning, wantReady: true,
		},
		{
			name: "start failed", policy: v1.RestartPolicyAlways, ctrs: []*runtime.ContainerStatus{running("a", 0)},
			waiting: map[string]runtime.ContainerWaiting{"debugger": {Reason: "CreateContainerConfigError", Message: "unable to find target container x"}},
			check: func(es v1.ContainerStatus) bool {
				return es.State.Waiting != nil && es.State.Waiting.Reason == "CreateContainerConfigError" &&
					es.State.Waiting.Message == "unable to find target container x"
			},
			wantPhase: v1.PodRunning, wantReady: true,
		},
		{
			name: "running", policy: v1.RestartPolicyAlways, ctrs: []*runtime.ContainerStatus{withImage(running("debugger", 0)), running("a", 0)},
			check: func(es v1.ContainerStatus) bool {
				return es.State.Running != nil && !es.Ready && es.Started != nil && *es.Started && es.RestartCount == 0 &&
					es.ContainerID == "containerd://debugger-id" && es.Image == "docker.io/library/busybox:1.35" && es.ImageID == "sha256:bb"
			},
			wantPhase: v1.PodRunning, wantReady: true,
		},
		{
			name: "exited under Always: terminated for good", policy: v1.RestartPolicyAlways,
			ctrs: []*runtime.ContainerStatus{exited("debugger", 3, 0), running("a", 0)},
			check: func(es v1.ContainerStatus) bool {
				t := es.State.Terminated
				return t != nil && t.ExitCode == 3 && t.Reason == "Error" && t.ContainerID == "containerd://debugger-x" &&
					es.LastTerminationState.Terminated == nil && es.RestartCount == 0 && !es.Ready
			},
			wantPhase: v1.PodRunning, wantReady: true,
		},
		{
			name: "running while the app container is done: phase from the app", policy: v1.RestartPolicyNever,
			ctrs:      []*runtime.ContainerStatus{running("debugger", 0), exited("a", 0, 0)},
			check:     func(es v1.ContainerStatus) bool { return es.State.Running != nil },
			wantPhase: v1.PodSucceeded, wantReady: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := specPod(tc.policy, "a")
			pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"},
				TargetContainerName:      "a",
			}}
			s := Generate(Input{Pod: pod, Runtime: &runtime.PodStatus{Containers: tc.ctrs, Sandboxes: readySandbox()},
				Waiting: tc.waiting, Now: t0})
			if len(s.EphemeralContainerStatuses) != 1 || s.EphemeralContainerStatuses[0].Name != "debugger" {
				t.Fatalf("ephemeral statuses %+v", s.EphemeralContainerStatuses)
			}
			if es := s.EphemeralContainerStatuses[0]; !tc.check(es) {
				t.Errorf("ephemeral status %+v", es)
			}
			if len(s.ContainerStatuses) != 1 {
				t.Errorf("container statuses %+v: the ephemeral container must not be among them", s.ContainerStatuses)
			}
			if s.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", s.Phase, tc.wantPhase)
			}
			ready := false
			for _, c := range s.Conditions {
				if c.Type == v1.PodReady {
					ready = c.Status == v1.ConditionTrue
				}
			}
			if ready != tc.wantReady {
				t.Errorf("pod ready %v, want %v", ready, tc.wantReady)
			}
		})
	}
}
