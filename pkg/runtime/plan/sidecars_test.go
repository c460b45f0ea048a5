package plan

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// TestSidecars: after initialization, sidecars keep running (restarted
// whatever the pod's restart policy) while app containers run, and stop
// with the pod once the app containers are done.
func TestSidecars(t *testing.T) {
	const (
		running = runtime.ContainerStateRunning
		exited  = runtime.ContainerStateExited
	)
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  *runtime.PodStatus
		backoff fakeBackoff
		want    view
	}{
		{
			name: "sidecar that exited after the apps started restarts under Never",
			pod:  newPod(inits("side"), onlyA, policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", running, 0, 0), ctr("x1", "side", "s1", exited, 1, 0)),
			want: view{SandboxID: "s1", Start: []string{"init:side/1+backoff"}},
		},
		{
			name: "sidecar restart waits out its back-off",
			pod:  newPod(inits("side"), onlyA, policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", running, 0, 0), ctr("x1", "side", "s1", exited, 0, 0)),
			backoff: fakeBackoff{"side": 10 * time.Second},
			want:    view{SandboxID: "s1", Backoff: map[string]time.Duration{"side": 10 * time.Second}},
		},
		{
			name: "running sidecar and apps: nothing to do",
			pod:  newPod(inits("side", "i1"), onlyA),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", running, 0, 0), ctr("y1", "i1", "s1", exited, 0, 0), ctr("x1", "side", "s1", running, 0, 0)),
			want: view{SandboxID: "s1"},
		},
		{
			name: "apps done under Never: the pod stops, sidecar not restarted",
			pod:  newPod(inits("side"), onlyA, policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", exited, 0, 0), ctr("x1", "side", "s1", exited, 137, 0)),
			want: view{SandboxID: "s1", KillPod: true, KillPodReason: "all containers have terminated"},
		},
		{
			name: "apps done while the sidecar runs: the pod stops",
			pod:  newPod(inits("side"), onlyA, policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", exited, 0, 0), ctr("x1", "side", "s1", running, 0, 0)),
			want: view{SandboxID: "s1", KillPod: true, KillPodReason: "all containers have terminated"},
		},
		{
			name: "app restarting under Always keeps the sidecar going",
			pod:  newPod(inits("side"), onlyA),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", exited, 1, 0), ctr("x1", "side", "s1", exited, 1, 0)),
			want: view{SandboxID: "s1", Start: []string{"a/1+backoff", "init:side/1+backoff"}},
		},
		{
			name: "sidecar record gone after initialization: started again",
			pod:  newPod(inits("side"), onlyA),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", running, 0, 0)),
			want: view{SandboxID: "s1", Start: []string{"init:side/0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bo BackoffView
			if tt.backoff != nil {
				bo = tt.backoff
			}
			checkView(t, Compute(tt.pod, tt.status, bo, t0), tt.want)
		})
	}
}

func TestTerminationOrder(t *testing.T) {
	pod := newPod(inits("side1", "i1", "side2"), onlyA)
	c := func(name string) *runtime.ContainerStatus { return &runtime.ContainerStatus{ID: name, Name: name} }
	names := func(cs []*runtime.ContainerStatus) []string {
		var out []string
		for _, x := range cs {
			out = append(out, x.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		running     []*runtime.ContainerStatus
		first, last []string
	}{
		{name: "apps first, sidecars in reverse order", pod: pod,
			running: []*runtime.ContainerStatus{c("side1"), c("a"), c("side2")},
			first:   []string{"a"}, last: []string{"side2", "side1"}},
		{name: "an init container still running stops with the apps", pod: pod,
			running: []*runtime.ContainerStatus{c("i1"), c("side1")},
			first:   []string{"i1"}, last: []string{"side1"}},
		{name: "unknown names stop first", pod: pod,
			running: []*runtime.ContainerStatus{c("gone"), c("side2")},
			first:   []string{"gone"}, last: []string{"side2"}},
		{name: "orphan: all at once", pod: nil,
			running: []*runtime.ContainerStatus{c("side1"), c("a")},
			first:   []string{"side1", "a"}},
	} {
		first, last := TerminationOrder(tc.pod, tc.running)
		if !reflect.DeepEqual(names(first), tc.first) || !reflect.DeepEqual(names(last), tc.last) {
			t.Errorf("%s: first %v last %v, want %v %v", tc.name, names(first), names(last), tc.first, tc.last)
		}
	}
}
