package podsync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/lifecycle"
)

// fakeHooks records hook runs; fail makes hooks of the named container
// fail; advance moves the fake clock as if the hook took that long.
type fakeHooks struct {
	mu      sync.Mutex
	runs    []string
	fail    map[string]bool
	advance func()
}

func (f *fakeHooks) Run(_ context.Context, t lifecycle.Target, h *v1.LifecycleHandler) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kind := "postStart"
	if t.Container.Lifecycle.PreStop == h {
		kind = "preStop"
	}
	f.runs = append(f.runs, kind+" "+t.Container.Name+" "+t.ID)
	if f.advance != nil {
		f.advance()
	}
	if f.fail[t.Container.Name] {
		return "hook said no", errors.New("exit 1")
	}
	return "", nil
}

func hookPod() *v1.Pod {
	pod := testPod("app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		PreStop:   &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}},
	}
	return pod
}

func TestPostStartRunsAfterStart(t *testing.T) {
	h := newHarness(t)
	hooks := &fakeHooks{}
	h.s.hooks = hooks
	res := h.sync(hookPod())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	_, rest := h.calls()
	wantCalls(t, "runtime calls", rest, []string{"RunPodSandbox web/0", "CreateContainer app/0", "StartContainer app"})
	id := h.rt.status("uid-1").LatestContainer("app").ID
	wantCalls(t, "hooks", hooks.runs, []string{"postStart app " + id})
}

func TestPostStartFailureKillsContainer(t *testing.T) {
	h := newHarness(t)
	hooks := &fakeHooks{fail: map[string]bool{"app": true}}
	h.s.hooks = hooks
	pod := hookPod()
	pod.Spec.Containers[0].Lifecycle.PreStop = nil
	res := h.sync(pod)
	if !errors.Is(res.Err, ErrPostStartHook) {
		t.Fatalf("err %v, want ErrPostStartHook", res.Err)
	}
	if w := res.Waiting["app"]; w.Reason != ReasonPostStartHookError || !strings.Contains(w.Message, "hook said no") {
		t.Errorf("waiting %+v", w)
	}
	_, rest := h.calls()
	wantCalls(t, "runtime calls", rest, []string{"RunPodSandbox web/0", "CreateContainer app/0", "StartContainer app", "StopContainer app"})
	ev := h.takeEvents()
	for _, want := range []string{"Warning FailedPostStartHook PostStartHook failed", "Normal Killing Stopping container app: FailedPostStartHook"} {
		if !slices.Contains(ev, want) {
			t.Errorf("events %q lack %q", ev, want)
		}
	}
	// The killed container restarts by the restart policy.
	hooks.fail = nil
	h.sync(pod)
	if c := h.rt.status("uid-1").LatestContainer("app"); c.RestartCount != 1 || c.State != runtime.ContainerStateRunning {
		t.Errorf("after restart: %+v", c)
	}
}

func TestPreStopRunsBeforeStopWithRemainingGrace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		took      time.Duration
		fail      bool
		wantGrace string
		wantEvent bool
	}{
		{name: "quick hook", took: 3 * time.Second, wantGrace: "4s"},
		{name: "hook uses the grace up", took: 6 * time.Second, wantGrace: "2s"},
		{name: "failing hook", took: time.Second, fail: true, wantGrace: "6s", wantEvent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			hooks := &fakeHooks{}
			h.s.hooks = hooks
			pod := hookPod()
			pod.Spec.Containers[0].Lifecycle.PostStart = nil
			h.sync(pod)
			h.calls()
			h.takeEvents()
			hooks.advance = func() { h.clock.Step(tc.took) }
			hooks.fail = map[string]bool{"app": tc.fail}
			id := h.rt.status("uid-1").LatestContainer("app").ID
			if err := h.s.KillPod(context.Background(), pod, h.rt.status("uid-1"), nil); err != nil {
				t.Fatal(err)
			}
			if got := h.rt.stops[id].String(); got != tc.wantGrace {
				t.Errorf("stopped with grace %s, want %s", got, tc.wantGrace)
			}
			if len(hooks.runs) != 1 || !strings.HasPrefix(hooks.runs[0], "preStop app") {
				t.Errorf("hooks %q", hooks.runs)
			}
			got := slices.Contains(h.takeEvents(), "Warning FailedPreStopHook PreStopHook failed")
			if got != tc.wantEvent {
				t.Errorf("FailedPreStopHook event %v, want %v", got, tc.wantEvent)
			}
		})
	}
}

func TestPreStopSkippedForExitedAndOrphans(t *testing.T) {
	h := newHarness(t)
	hooks := &fakeHooks{}
	h.s.hooks = hooks
	pod := hookPod()
	pod.Spec.Containers[0].Lifecycle.PostStart = nil
	h.sync(pod)
	st := h.rt.status("uid-1")
	// An orphan (no spec) has no hook to run.
	if err := h.s.KillPod(context.Background(), nil, st, nil); err != nil {
		t.Fatal(err)
	}
	if len(hooks.runs) != 0 {
		t.Errorf("hooks ran: %q", hooks.runs)
	}
}
