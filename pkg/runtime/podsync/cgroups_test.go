package podsync

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// fakeCgroups records what the pod cgroup hook asks of the manager.
type fakeCgroups struct {
	calls []string
	err   error
}

func (f *fakeCgroups) EnsurePod(pod *v1.Pod) (string, error) {
	f.calls = append(f.calls, "ensure "+string(pod.UID))
	return "/kubepods/besteffort/pod" + string(pod.UID), f.err
}

func (f *fakeCgroups) RemovePod(uid types.UID) error {
	f.calls = append(f.calls, "remove "+string(uid))
	return nil
}

// TestPodCgroupHook: the sandbox is created in the pod's cgroup, made
// before it; a pod whose cgroup cannot be made gets no sandbox; the cgroup
// is removed once the pod is stopped, and again (a no-op then) with the
// pod's removal, never while it runs.
func TestPodCgroupHook(t *testing.T) {
	h := newHarness(t)
	cg := &fakeCgroups{}
	opts := h.s.opts
	opts.Cgroups = cg
	h.s = New(h.rt, record.NewFakeRecorder(1000), opts)
	pod := testPod("a")
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("SyncPod: %v", res.Err)
	}
	for _, sb := range h.rt.sandboxes {
		if got := sb.config.GetLinux().GetCgroupParent(); got != "/kubepods/besteffort/poduid-1" {
			t.Errorf("sandbox cgroup parent %q", got)
		}
	}
	wantCalls(t, "cgroup calls after start", cg.calls, []string{"ensure uid-1"})

	// A sandbox replaced within a sync keeps the pod's cgroup.
	h.rt.killSandbox(h.rt.status(pod.UID).LatestSandbox().ID)
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("SyncPod after the sandbox died: %v", res.Err)
	}
	wantCalls(t, "cgroup calls after a new sandbox", cg.calls, []string{"ensure uid-1", "ensure uid-1"})
	cg.calls = []string{"ensure uid-1"}

	ctx := context.Background()
	if err := h.s.RemovePod(ctx, h.rt.status(pod.UID)); !errors.Is(err, ErrStillRunning) {
		t.Fatalf("RemovePod of a running pod = %v", err)
	}
	wantCalls(t, "no removal while the pod runs", cg.calls, []string{"ensure uid-1"})
	if err := h.s.KillPod(ctx, pod, h.rt.status(pod.UID), nil); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, "cgroup calls after the kill", cg.calls, []string{"ensure uid-1", "remove uid-1"})
	if err := h.s.RemovePod(ctx, h.rt.status(pod.UID)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, "cgroup calls after removal", cg.calls, []string{"ensure uid-1", "remove uid-1", "remove uid-1"})

	// A cgroup that cannot be made keeps the sandbox from being created.
	h2 := newHarness(t)
	opts = h2.s.opts
	opts.Cgroups = &fakeCgroups{err: errors.New("no memory controller")}
	h2.s = New(h2.rt, record.NewFakeRecorder(1000), opts)
	res := h2.sync(testPod("a"))
	if res.Err == nil || !errors.Is(res.Err, ErrCreatePodSandbox) {
		t.Errorf("SyncPod with a failing cgroup = %v, want ErrCreatePodSandbox", res.Err)
	}
	if len(h2.rt.sandboxes) != 0 {
		t.Errorf("sandbox created without its cgroup")
	}
}
