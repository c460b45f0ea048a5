package plan

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// debug adds an ephemeral container, targeting the named container when
// target is not "".
func debug(name, target string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "busybox:1.35"},
			TargetContainerName:      target,
		})
	}
}

// TestEphemeral: an ephemeral container starts once in the running
// sandbox, joins its target's running instance, and is never started
// again, whatever happened to it or to the pod.
func TestEphemeral(t *testing.T) {
	tests := []struct {
		name   string
		pod    *v1.Pod
		status *runtime.PodStatus
		want   view
	}{
		{
			name:   "added to a running pod: started",
			pod:    newPod(onlyA, debug("dbg", "")),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1", Ephemeral: []string{"dbg"}},
		},
		{
			name:   "with a target: joins the target's running instance",
			pod:    newPod(debug("dbg", "b")),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1", Ephemeral: []string{"dbg>b@c2"}},
		},
		{
			name: "target not running: planned without an ID (the start fails, as upstream)",
			pod:  newPod(debug("dbg", "b"), policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", running, 0, 0), ctr("c2", "b", "s1", exited, 0, 0)),
			want: view{SandboxID: "s1", Ephemeral: []string{"dbg>b@"}},
		},
		{
			name: "pod done: stopped, nothing starts",
			pod:  newPod(onlyA, debug("dbg", "a"), policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)),
				ctr("c1", "a", "s1", exited, 0, 0), ctr("s", "side", "s1", running, 0, 0)),
			want: view{SandboxID: "s1", KillPod: true, KillPodReason: "all containers have terminated"},
		},
		{
			name: "target of an old sandbox does not count",
			pod:  newPod(debug("dbg", "b")),
			status: status(sbs(ready("s2", 1), notReady("s1", 0)),
				ctr("c3", "a", "s2", running, 0, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want: view{SandboxID: "s2", Kill: []string{"c2(b)"}, Start: []string{"b/1"}, Ephemeral: []string{"dbg>b@"}},
		},
		{
			name: "running: nothing to do",
			pod:  newPod(onlyA, debug("dbg", "")),
			status: status(sbs(ready("s1", 0)),
				ctr("e1", "dbg", "s1", running, 0, 0), ctr("c1", "a", "s1", running, 0, 0)),
			want: view{SandboxID: "s1"},
		},
		{
			name: "exited under restartPolicy Always: never restarted",
			pod:  newPod(onlyA, debug("dbg", "")),
			status: status(sbs(ready("s1", 0)),
				ctr("e1", "dbg", "s1", exited, 1, 0), ctr("c1", "a", "s1", running, 0, 0)),
			want: view{SandboxID: "s1"},
		},
		{
			name: "a new sandbox does not bring it back",
			pod:  newPod(onlyA, debug("dbg", "")),
			status: status(sbs(notReady("s1", 0)),
				ctr("e1", "dbg", "s1", exited, 137, 0), ctr("c1", "a", "s1", exited, 137, 0)),
			want: view{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []string{"a/1+backoff"}},
		},
		{
			name:   "no sandbox yet: waits for it",
			pod:    newPod(onlyA, debug("dbg", "")),
			status: nil,
			want:   view{CreateSandbox: true, Start: []string{"a/0"}},
		},
		{
			name: "started while an init container runs",
			pod:  newPod(onlyA, inits("i1"), debug("dbg", "i1")),
			status: status(sbs(ready("s1", 0)),
				ctr("x1", "i1", "s1", running, 0, 0)),
			want: view{SandboxID: "s1", Ephemeral: []string{"dbg>i1@x1"}},
		},
		{
			name:   "pod being deleted: not started",
			pod:    newPod(onlyA, debug("dbg", ""), deleting),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name: "running alone does not keep a finished pod",
			pod:  newPod(onlyA, debug("dbg", ""), policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)),
				ctr("e1", "dbg", "s1", running, 0, 0), ctr("c1", "a", "s1", exited, 0, 0)),
			want: view{SandboxID: "s1", KillPod: true, KillPodReason: "all containers have terminated"},
		},
		{
			name: "two added, one ran: only the other starts, in spec order",
			pod:  newPod(onlyA, debug("d1", ""), debug("d2", "a"), debug("d3", "")),
			status: status(sbs(ready("s1", 0)),
				ctr("e1", "d1", "s1", exited, 0, 0), ctr("c1", "a", "s1", running, 0, 0)),
			want: view{SandboxID: "s1", Ephemeral: []string{"d2>a@c1", "d3"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Compute(tt.pod, tt.status, nil, t0)
			checkView(t, a, tt.want)
			if got, want := a.Idle(), len(tt.want.Ephemeral) == 0 && len(tt.want.Start) == 0 && !tt.want.KillPod && len(tt.want.Kill) == 0 && !tt.want.CreateSandbox; got != want {
				t.Errorf("Idle() = %v, want %v", got, want)
			}
		})
	}
}

// TestStartsOrder: ephemeral containers come first, as upstream starts
// them before init and app containers.
func TestStartsOrder(t *testing.T) {
	a := Actions{EphemeralToStart: []Start{{Name: "dbg"}}, ContainersToStart: []Start{{Name: "a"}, {Name: "b"}}}
	var names []string
	for _, s := range a.Starts() {
		names = append(names, s.Name)
	}
	if got := len(names); got != 3 || names[0] != "dbg" || names[1] != "a" || names[2] != "b" {
		t.Errorf("Starts() = %v, want [dbg a b]", names)
	}
	if len(a.ContainersToStart) != 2 {
		t.Errorf("Starts() changed ContainersToStart: %v", a.ContainersToStart)
	}
}

func TestIsEphemeral(t *testing.T) {
	pod := newPod(debug("dbg", ""))
	if !IsEphemeral(pod, "dbg") || IsEphemeral(pod, "a") || IsEphemeral(nil, "dbg") {
		t.Error("IsEphemeral: wrong answer")
	}
	if s := EphemeralSpec(pod, 0); s.Name != "dbg" || s != (*v1.Container)(&pod.Spec.EphemeralContainers[0].EphemeralContainerCommon) {
		t.Errorf("EphemeralSpec does not point into the spec: %+v", s)
	}
}
