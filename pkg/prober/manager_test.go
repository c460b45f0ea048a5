package prober

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// switchExec answers each exec probe with the exit code set for its
// command's first word.
type switchExec struct {
	mu   sync.Mutex
	exit map[string]int32
}

func (s *switchExec) set(cmd string, code int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exit[cmd] = code
}

func (s *switchExec) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &runtimeapi.ExecSyncResponse{ExitCode: s.exit[cmd[0]], Stderr: []byte(cmd[0] + " said no")}, nil
}

func execProbe(cmd string) *v1.Probe {
	return &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}}}
}

type probeEnv struct {
	m       *Manager
	exec    *switchExec
	changes chan types.UID
	events  *record.FakeRecorder
}

// newProbeEnv runs a manager until the test ends. Tests call it inside
// synctest.Test, so the probe periods pass in fake time, not real.
func newProbeEnv(t *testing.T) *probeEnv {
	ctx, cancel := context.WithCancel(context.Background())
	e := &probeEnv{exec: &switchExec{exit: map[string]int32{}}, changes: make(chan types.UID, 100), events: record.NewFakeRecorder(100)}
	e.m = New(Options{Exec: e.exec, Recorder: e.events, OnChange: func(uid types.UID) { e.changes <- uid }})
	stopped := make(chan error)
	go func() { stopped <- e.m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return e
}

// waitFor waits for OnChange calls until the pod's view satisfies ok.
func (e *probeEnv) waitFor(t *testing.T, uid types.UID, what string, ok func(View) bool) View {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if v := e.m.View(uid); ok(v) {
			return v
		}
		select {
		case <-e.changes:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; view %+v", what, e.m.View(uid))
		}
	}
}

func running(name, id string) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{ID: id, Name: name, State: runtime.ContainerStateRunning, StartedAt: time.Now()}
}

func TestManagerReadinessAndLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newProbeEnv(t)
		// Readiness fails until the first look: the first probe may run
		// before it.
		e.exec.set("ready", 1)
		e.exec.set("live", 0)
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "c", ReadinessProbe: execProbe("ready"), LivenessProbe: execProbe("live")},
		}}}
		rs := &runtime.PodStatus{Containers: []*runtime.ContainerStatus{running("c", "id1")}}
		e.m.Observe(pod, rs, "10.0.0.1")
		if v := e.m.View("u1"); v.Ready("c", "id1") || !v.Started("c", "id1") {
			t.Fatalf("before any probe: %+v, want started and not ready", v)
		}
		e.exec.set("ready", 0)
		e.waitFor(t, "u1", "ready", func(v View) bool { return v.Ready("c", "id1") })

		e.exec.set("ready", 1)
		e.waitFor(t, "u1", "not ready", func(v View) bool { return !v.Ready("c", "id1") })

		e.exec.set("live", 1)
		v := e.waitFor(t, "u1", "liveness failure", func(v View) bool { return v.Unhealthy("c", "id1") != "" })
		if got := v.Unhealthy("c", "id1"); got != "liveness" {
			t.Fatalf("Unhealthy = %q", got)
		}
		if !hasEvent(e.events, "Warning Unhealthy Liveness probe failed: live said no") {
			t.Fatal("no Unhealthy event for the liveness failure")
		}

		// The restarted instance starts over.
		e.exec.set("live", 0)
		e.exec.set("ready", 0)
		rs = &runtime.PodStatus{Containers: []*runtime.ContainerStatus{running("c", "id2")}}
		e.m.Observe(pod, rs, "10.0.0.1")
		e.waitFor(t, "u1", "new instance ready", func(v View) bool { return v["c"].ID == "id2" && v.Ready("c", "id2") && v.Unhealthy("c", "id2") == "" })

		e.m.Remove("u1")
		if v := e.m.View("u1"); v != nil {
			t.Fatalf("view after Remove: %+v", v)
		}
	})
}

func TestManagerStartupGating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newProbeEnv(t)
		e.exec.set("start", 1)
		e.exec.set("ready", 0)
		p := execProbe("start")
		p.FailureThreshold = 1000 // keeps failing without giving up
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u2"}, Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "c", StartupProbe: p, ReadinessProbe: execProbe("ready")},
		}}}
		e.m.Observe(pod, &runtime.PodStatus{Containers: []*runtime.ContainerStatus{running("c", "id1")}}, "")
		// Failed startup probes: the readiness probe must not have run.
		waitEvent(t, e.events, "Warning Unhealthy Startup probe failed: start said no")
		if v := e.m.View("u2"); v.Started("c", "id1") || v.Ready("c", "id1") {
			t.Fatalf("while the startup probe fails: %+v", v)
		}
		e.exec.set("start", 0)
		e.waitFor(t, "u2", "started and ready", func(v View) bool { return v.Started("c", "id1") && v.Ready("c", "id1") })
	})
}

func TestManagerTerminatingStopsLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newProbeEnv(t)
		e.exec.set("live", 1)
		p := execProbe("live")
		p.InitialDelaySeconds = 3600
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u3"}, Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "c", LivenessProbe: p, ReadinessProbe: execProbe("ready")},
		}}}
		rs := &runtime.PodStatus{Containers: []*runtime.ContainerStatus{running("c", "id1")}}
		e.m.Observe(pod, rs, "")
		e.m.mu.Lock()
		n := len(e.m.pods["u3"].containers["c"].workers)
		e.m.mu.Unlock()
		if n != 2 {
			t.Fatalf("%d workers, want 2", n)
		}
		deleting := pod.DeepCopy()
		now := metav1.Now()
		deleting.DeletionTimestamp = &now
		e.m.Observe(deleting, rs, "")
		e.m.mu.Lock()
		_, live := e.m.pods["u3"].containers["c"].workers[Liveness]
		_, ready := e.m.pods["u3"].containers["c"].workers[Readiness]
		e.m.mu.Unlock()
		if live || !ready {
			t.Fatalf("terminating pod: liveness worker %v (want gone), readiness worker %v (want kept)", live, ready)
		}
	})
}

func hasEvent(r *record.FakeRecorder, want string) bool {
	for {
		select {
		case ev := <-r.Events:
			if ev == want {
				return true
			}
		default:
			return false
		}
	}
}

func waitEvent(t *testing.T, r *record.FakeRecorder, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-r.Events:
			if ev == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event %q", want)
		}
	}
}
