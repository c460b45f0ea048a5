package plan

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// fakeBackoff reports a fixed remaining back-off per container name.
type fakeBackoff map[string]time.Duration

func (f fakeBackoff) Remaining(_ types.UID, name string, _, _ time.Time) time.Duration {
	return f[name]
}

type podOpt func(*v1.Pod)

func newPod(opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{
				{Name: "a", Image: "busybox:1.35"},
				{Name: "b", Image: "busybox:1.35"},
			},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func policy(rp v1.RestartPolicy) podOpt { return func(p *v1.Pod) { p.Spec.RestartPolicy = rp } }
func hostNet(p *v1.Pod)                 { p.Spec.HostNetwork = true }
func deleting(p *v1.Pod)                { p.DeletionTimestamp = &metav1.Time{Time: t0} }
func onlyA(p *v1.Pod)                   { p.Spec.Containers = p.Spec.Containers[:1] }
func changeB(p *v1.Pod)                 { p.Spec.Containers[1].Image = "busybox:1.36" }
func inits(names ...string) podOpt {
	return func(p *v1.Pod) {
		for _, n := range names {
			c := v1.Container{Name: n, Image: "busybox:1.35"}
			if strings.HasPrefix(n, "side") {
				always := v1.ContainerRestartPolicyAlways
				c.RestartPolicy = &always
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
	}
}

func ready(id string, attempt uint32) *runtime.SandboxStatus {
	return &runtime.SandboxStatus{ID: id, State: runtime.SandboxStateReady, Attempt: attempt, IP: "10.88.0.2"}
}

func notReady(id string, attempt uint32) *runtime.SandboxStatus {
	return &runtime.SandboxStatus{ID: id, State: runtime.SandboxStateNotReady, Attempt: attempt}
}

// ctr describes a container instance of the default pod (spec hash of its
// name in newPod()).
func ctr(id, name, sandbox string, state runtime.ContainerState, exit int32, restarts int) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{
		ID: id, Name: name, SandboxID: sandbox, State: state, ExitCode: exit, RestartCount: restarts,
		Hash:       runtime.HashContainer(&v1.Container{Name: name, Image: "busybox:1.35"}),
		FinishedAt: t0.Add(-time.Second),
	}
}

const (
	running = runtime.ContainerStateRunning
	exited  = runtime.ContainerStateExited
	created = runtime.ContainerStateCreated
	unknown = runtime.ContainerStateUnknown
)

func status(sbs []*runtime.SandboxStatus, cs ...*runtime.ContainerStatus) *runtime.PodStatus {
	return &runtime.PodStatus{UID: "uid-1", Name: "web", Namespace: "default", Sandboxes: sbs, Containers: cs}
}

func sbs(s ...*runtime.SandboxStatus) []*runtime.SandboxStatus { return s }

// view is the part of Actions a test states; start entries are
// "name/restartCount" with an "init:" prefix for init containers and a
// "+backoff" suffix for crash-loop restarts.
type view struct {
	KillPod       bool
	CreateSandbox bool
	Attempt       uint32
	SandboxID     string
	Kill          []string
	Start         []string
	// Ephemeral are the EphemeralToStart entries, "name" or
	// "name>target@targetID".
	Ephemeral     []string
	Backoff       map[string]time.Duration
	Remove        []string
	RemoveSandbox []string
	KillPodReason string // substring
}

func project(a Actions) view {
	v := view{KillPod: a.KillPod, KillPodReason: a.KillPodReason, CreateSandbox: a.CreateSandbox, Attempt: a.SandboxAttempt, SandboxID: a.SandboxID,
		Remove: a.ContainersToRemove, RemoveSandbox: a.SandboxesToRemove}
	for id, k := range a.ContainersToKill {
		v.Kill = append(v.Kill, id+"("+k.Name+")")
	}
	sort.Strings(v.Kill)
	for _, s := range a.ContainersToStart {
		e := s.Name + "/" + strconv.Itoa(s.RestartCount)
		if s.Init {
			e = "init:" + e
		}
		if !s.AfterExit.IsZero() {
			e += "+backoff"
		}
		if s.Spec == nil || s.Spec.Name != s.Name {
			e += "!badspec"
		}
		v.Start = append(v.Start, e)
	}
	for _, s := range a.EphemeralToStart {
		e := s.Name
		if s.Target != "" {
			e += ">" + s.Target + "@" + s.TargetID
		}
		if !s.Ephemeral || s.RestartCount != 0 || s.Spec == nil || s.Spec.Name != s.Name {
			e += "!bad"
		}
		v.Ephemeral = append(v.Ephemeral, e)
	}
	if len(a.ContainersInBackoff) > 0 {
		v.Backoff = a.ContainersInBackoff
	}
	return v
}

// checkView compares a plan with the view a test wants; the kill reason
// only has to contain the wanted one.
func checkView(t *testing.T, a Actions, want view) {
	t.Helper()
	got := project(a)
	if !strings.Contains(got.KillPodReason, want.KillPodReason) {
		t.Errorf("KillPodReason = %q, want it to contain %q", got.KillPodReason, want.KillPodReason)
	}
	got.KillPodReason, want.KillPodReason = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compute():\n got %+v\nwant %+v", got, want)
	}
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  *runtime.PodStatus
		backoff fakeBackoff
		want    view
	}{
		{
			name: "new pod: sandbox and every container in spec order",
			pod:  newPod(),
			want: view{CreateSandbox: true, Start: []string{"a/0", "b/0"}},
		},
		{
			name:   "nil status is a new pod",
			pod:    newPod(),
			status: nil,
			want:   view{CreateSandbox: true, Start: []string{"a/0", "b/0"}},
		},
		{
			name: "new pod with init containers: only the first init container",
			pod:  newPod(inits("i1", "i2")),
			want: view{CreateSandbox: true, Start: []string{"init:i1/0"}},
		},
		{
			name:   "all running and unchanged: nothing",
			pod:    newPod(),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "host network sandbox needs no IP",
			pod:    newPod(hostNet, onlyA),
			status: status(sbs(&runtime.SandboxStatus{ID: "s1", State: runtime.SandboxStateReady, HostNetwork: true}), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "one container missing: start only it",
			pod:    newPod(),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1", Start: []string{"b/0"}},
		},
		{
			name:    "changed image restarts only that container, without back-off",
			pod:     newPod(changeB),
			status:  status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), ctr("c2", "b", "s1", running, 0, 3)),
			backoff: fakeBackoff{"b": time.Minute},
			want:    view{SandboxID: "s1", Kill: []string{"c2(b)"}, Start: []string{"b/4"}},
		},
		{
			name:   "Always: exited container restarts",
			pod:    newPod(onlyA),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 0, 2)),
			want:   view{SandboxID: "s1", Start: []string{"a/3+backoff"}},
		},
		{
			name:    "Always: exited container in back-off waits",
			pod:     newPod(),
			status:  status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 1, 2), ctr("c2", "b", "s1", running, 0, 0)),
			backoff: fakeBackoff{"a": 15 * time.Second},
			want:    view{SandboxID: "s1", Backoff: map[string]time.Duration{"a": 15 * time.Second}},
		},
		{
			name:    "only container in back-off keeps the pod",
			pod:     newPod(onlyA),
			status:  status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 1, 2)),
			backoff: fakeBackoff{"a": 15 * time.Second},
			want:    view{SandboxID: "s1", Backoff: map[string]time.Duration{"a": 15 * time.Second}},
		},
		{
			name:   "OnFailure: failed container restarts",
			pod:    newPod(policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 1, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1", Start: []string{"a/1+backoff"}},
		},
		{
			name:   "OnFailure: succeeded container stays done",
			pod:    newPod(policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 0, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "OnFailure: all succeeded: sandbox is stopped",
			pod:    newPod(policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 0, 0), ctr("c2", "b", "s1", exited, 0, 0)),
			want:   view{SandboxID: "s1", KillPod: true, KillPodReason: "all containers have terminated"},
		},
		{
			name:   "Never: failed container is not restarted",
			pod:    newPod(policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 1, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "Never: all terminated: sandbox is stopped",
			pod:    newPod(policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 1, 0), ctr("c2", "b", "s1", exited, 0, 0)),
			want:   view{SandboxID: "s1", KillPod: true},
		},
		{
			name:   "Never: stopped sandbox of a finished pod is not recreated",
			pod:    newPod(policy(v1.RestartPolicyNever)),
			status: status(sbs(notReady("s1", 0)), ctr("c1", "a", "s1", exited, 1, 0), ctr("c2", "b", "s1", exited, 0, 0)),
			want:   view{KillPod: true, KillPodReason: "not ready"},
		},
		{
			name:   "OnFailure: stopped sandbox with all succeeded is not recreated",
			pod:    newPod(policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(notReady("s1", 0)), ctr("c1", "a", "s1", exited, 0, 0), ctr("c2", "b", "s1", exited, 0, 0)),
			want:   view{KillPod: true},
		},
		{
			name:   "OnFailure: dead sandbox recreated for the failed container only",
			pod:    newPod(policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(notReady("s1", 0)), ctr("c1", "a", "s1", exited, 0, 0), ctr("c2", "b", "s1", exited, 2, 0)),
			want:   view{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []string{"b/1+backoff"}},
		},
		{
			name:   "Always: dead sandbox is killed and recreated with the next attempt",
			pod:    newPod(),
			status: status(sbs(notReady("s1", 3)), ctr("c1", "a", "s1", running, 0, 0), ctr("c2", "b", "s1", exited, 137, 1)),
			want:   view{KillPod: true, KillPodReason: "not ready", CreateSandbox: true, Attempt: 4, Start: []string{"a/1", "b/2+backoff"}},
		},
		{
			name:    "new sandbox still honours crash back-off",
			pod:     newPod(),
			status:  status(sbs(notReady("s1", 0)), ctr("c1", "a", "s1", exited, 1, 4), ctr("c2", "b", "s1", exited, 0, 0)),
			backoff: fakeBackoff{"a": time.Minute},
			want:    view{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []string{"b/1+backoff"}, Backoff: map[string]time.Duration{"a": time.Minute}},
		},
		{
			name:   "network mode changed: recreate",
			pod:    newPod(hostNet),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), ctr("c2", "b", "s1", running, 0, 0)),
			want:   view{KillPod: true, KillPodReason: "network mode changed", CreateSandbox: true, Attempt: 1, Start: []string{"a/1", "b/1"}},
		},
		{
			name:   "pod network sandbox without IP: recreate",
			pod:    newPod(onlyA),
			status: status(sbs(&runtime.SandboxStatus{ID: "s1", State: runtime.SandboxStateReady}), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{KillPod: true, KillPodReason: "no IP", CreateSandbox: true, Attempt: 1, Start: []string{"a/1"}},
		},
		{
			name:   "two ready sandboxes: recreate",
			pod:    newPod(onlyA),
			status: status(sbs(ready("s2", 1), ready("s1", 0)), ctr("c1", "a", "s2", running, 0, 0)),
			want:   view{KillPod: true, KillPodReason: "2 sandboxes", CreateSandbox: true, Attempt: 2, Start: []string{"a/1"}},
		},
		{
			name:   "being deleted: nothing is started",
			pod:    newPod(deleting),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", exited, 1, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "being deleted with dead sandbox: kill, no new sandbox",
			pod:    newPod(deleting),
			status: status(sbs(notReady("s1", 0))),
			want:   view{KillPod: true},
		},
		{
			name:   "created-but-never-started and unknown instances are replaced",
			pod:    newPod(),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", created, 0, 0), ctr("c2", "b", "s1", unknown, 0, 1)),
			want:   view{SandboxID: "s1", Kill: []string{"c1(a)", "c2(b)"}, Start: []string{"a/1", "b/2"}},
		},
		{
			name:   "running container of an old sandbox is replaced",
			pod:    newPod(onlyA),
			status: status(sbs(ready("s2", 1), notReady("s1", 0)), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{SandboxID: "s2", Kill: []string{"c1(a)"}, Start: []string{"a/1"}},
		},
		{
			name:   "init: first succeeded, second starts",
			pod:    newPod(inits("i1", "i2")),
			status: status(sbs(ready("s1", 0)), ctr("x1", "i1", "s1", exited, 0, 0)),
			want:   view{SandboxID: "s1", Start: []string{"init:i2/0"}},
		},
		{
			name:   "init: running init container is waited for",
			pod:    newPod(inits("i1", "i2")),
			status: status(sbs(ready("s1", 0)), ctr("x1", "i1", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "init: all succeeded, app containers start in order",
			pod:    newPod(inits("i1", "i2")),
			status: status(sbs(ready("s1", 0)), ctr("x2", "i2", "s1", exited, 0, 0), ctr("x1", "i1", "s1", exited, 0, 0)),
			want:   view{SandboxID: "s1", Start: []string{"a/0", "b/0"}},
		},
		{
			name:   "init: failed under Never fails the pod",
			pod:    newPod(inits("i1", "i2"), policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)), ctr("x1", "i1", "s1", exited, 3, 0)),
			want:   view{SandboxID: "s1", KillPod: true, KillPodReason: `init container "i1" failed with exit code 3`},
		},
		{
			name:   "init: failed under Never, sandbox gone: stays dead",
			pod:    newPod(inits("i1"), policy(v1.RestartPolicyNever)),
			status: status(sbs(notReady("s1", 0)), ctr("x1", "i1", "s1", exited, 3, 0)),
			want:   view{KillPod: true},
		},
		{
			name:   "init: failed under OnFailure restarts",
			pod:    newPod(inits("i1", "i2"), policy(v1.RestartPolicyOnFailure)),
			status: status(sbs(ready("s1", 0)), ctr("x1", "i1", "s1", exited, 3, 0)),
			want:   view{SandboxID: "s1", Start: []string{"init:i1/1+backoff"}},
		},
		{
			name:    "init: failed and backing off",
			pod:     newPod(inits("i1")),
			status:  status(sbs(ready("s1", 0)), ctr("x1", "i1", "s1", exited, 3, 2)),
			backoff: fakeBackoff{"i1": 40 * time.Second},
			want:    view{SandboxID: "s1", Backoff: map[string]time.Duration{"i1": 40 * time.Second}},
		},
		{
			name:   "init: runs again in a new sandbox",
			pod:    newPod(inits("i1", "i2")),
			status: status(sbs(ready("s2", 1), notReady("s1", 0)), ctr("x2", "i2", "s1", exited, 0, 0), ctr("x1", "i1", "s1", exited, 0, 0)),
			want:   view{SandboxID: "s2", Start: []string{"init:i1/1"}},
		},
		{
			name:   "init: over once an app container ran in this sandbox",
			pod:    newPod(inits("i1"), onlyA),
			status: status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1"},
		},
		{
			name:   "init: running sidecar lets the next init container start",
			pod:    newPod(inits("side", "i2")),
			status: status(sbs(ready("s1", 0)), ctr("x1", "side", "s1", running, 0, 0)),
			want:   view{SandboxID: "s1", Start: []string{"init:i2/0"}},
		},
		{
			name:   "init: exited sidecar restarts even under Never",
			pod:    newPod(inits("side"), policy(v1.RestartPolicyNever)),
			status: status(sbs(ready("s1", 0)), ctr("x1", "side", "s1", exited, 0, 0)),
			want:   view{SandboxID: "s1", Start: []string{"init:side/1+backoff"}},
		},
		{
			name: "prune: keep newest and newest dead instance, drop older dead ones and their sandbox",
			pod:  newPod(onlyA),
			status: status(sbs(ready("s3", 2), notReady("s2", 1), notReady("s1", 0)),
				ctr("c4", "a", "s3", running, 0, 3),
				ctr("c3", "a", "s3", exited, 1, 2),
				ctr("c2", "a", "s2", exited, 1, 1),
				ctr("c1", "a", "s1", exited, 1, 0)),
			want: view{SandboxID: "s3", Remove: []string{"c2", "c1"}, RemoveSandbox: []string{"s2", "s1"}},
		},
		{
			name: "prune: dead sandbox holding the last dead instance is kept",
			pod:  newPod(onlyA),
			status: status(sbs(ready("s2", 1), notReady("s1", 0)),
				ctr("c2", "a", "s2", running, 0, 1),
				ctr("c1", "a", "s1", exited, 1, 0)),
			want: view{SandboxID: "s2"},
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

// TestComputeKillPodReason checks that a kill always says why.
func TestComputeKillPodReason(t *testing.T) {
	a := Compute(newPod(), status(sbs(notReady("s1", 0))), nil, t0)
	if !a.KillPod || a.KillPodReason == "" {
		t.Fatalf("KillPod=%v reason=%q, want a kill with a reason", a.KillPod, a.KillPodReason)
	}
}

// TestIdle: only a pod that runs as its spec wants plans nothing.
func TestIdle(t *testing.T) {
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  *runtime.PodStatus
		backoff fakeBackoff
		want    bool
	}{
		{"nothing runs", newPod(), nil, nil, false},
		{"all running", newPod(), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", running, 0, 0), ctr("b1", "b", "s1", running, 0, 0)), nil, true},
		{"one not started", newPod(), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", running, 0, 0)), nil, false},
		{"one exited", newPod(), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", running, 0, 0), ctr("b1", "b", "s1", exited, 1, 0)), nil, false},
		{"one in back-off", newPod(), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", running, 0, 0), ctr("b1", "b", "s1", exited, 1, 0)),
			fakeBackoff{"b": time.Minute}, false},
		{"sandbox dead", newPod(), status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", running, 0, 0), ctr("b1", "b", "s1", running, 0, 0)), nil, false},
		{"spec changed", newPod(changeB), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", running, 0, 0), ctr("b1", "b", "s1", running, 0, 0)), nil, false},
		{"completed, sandbox still up", newPod(policy(v1.RestartPolicyNever), onlyA), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0)), nil, false},
		// The plan kills a finished pod again on every sync (idempotent), so it
		// never counts as idle; Settled counts it done once that stop is
		// (TestSettled).
		{"completed and stopped", newPod(policy(v1.RestartPolicyNever), onlyA), status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0)), nil, false},
	}
	for _, tc := range tests {
		var b BackoffView
		if tc.backoff != nil {
			b = tc.backoff
		}
		if got := Compute(tc.pod, tc.status, b, t0).Idle(); got != tc.want {
			t.Errorf("%s: Idle() = %v, want %v (plan %+v)", tc.name, got, tc.want, project(Compute(tc.pod, tc.status, b, t0)))
		}
	}
}

// TestSettled: a finished pod's plan still kills it (its sandbox is not
// ready), but once the stop of its newest sandbox is done, another sync
// would change nothing; anything that may still run, or a sandbox nobody
// stopped, keeps the kill.
func TestSettled(t *testing.T) {
	never := newPod(policy(v1.RestartPolicyNever), onlyA)
	onFailure := newPod(policy(v1.RestartPolicyOnFailure), onlyA)
	doneNever := status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0))
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  *runtime.PodStatus
		stopped string
		want    bool
	}{
		{"all running, nothing stopped", newPod(), status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", running, 0, 0), ctr("b1", "b", "s1", running, 0, 0)), "", true},
		{"completed, sandbox still up", never, status(sbs(ready("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0)), "", false},
		{"completed, stop of its sandbox done", never, doneNever, "s1", true},
		{"completed, stop not known (nodelet restarted)", never, doneNever, "", false},
		{"completed, another sandbox was stopped", never, doneNever, "s0", false},
		{"completed, an older sandbox still ready", never,
			status(sbs(notReady("s1", 1), ready("s0", 0)), ctr("a1", "a", "s1", exited, 0, 0)), "s1", false},
		{"completed, a container still created", never,
			status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0), ctr("x1", "x", "s1", created, 0, 0)), "s1", false},
		{"succeeded under OnFailure, stopped", onFailure, status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0)), "s1", true},
		// A failed container under OnFailure gets a new sandbox: never settled.
		{"failed under OnFailure, stopped", onFailure, status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 1, 0)), "s1", false},
		// Under Always a stopped pod comes back.
		{"stopped under Always", newPod(), status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0), ctr("b1", "b", "s1", exited, 0, 0)), "s1", false},
		{"deleted and stopped", newPod(deleting), status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", exited, 0, 0), ctr("b1", "b", "s1", exited, 0, 0)), "s1", true},
		{"deleted, containers still running", newPod(deleting), status(sbs(notReady("s1", 0)), ctr("a1", "a", "s1", running, 0, 0)), "s1", false},
	}
	for _, tc := range tests {
		a := Compute(tc.pod, tc.status, nil, t0)
		if got := Settled(a, tc.status, tc.stopped); got != tc.want {
			t.Errorf("%s: Settled = %v, want %v (plan %+v)", tc.name, got, tc.want, project(a))
		}
	}
}
