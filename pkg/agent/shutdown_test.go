package agent

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/shutdown"
	"github.com/nodelet/nodelet/pkg/status"
)

// A pod stopped for a node shutdown is killed on its worker, gets the
// status the shutdown marks (Failed, Terminated), is not started again by
// later syncs, and leaves the active pods; the others keep running.
func TestStopForShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	updates := make(chan config.PodUpdate, 10)
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)},
		Updates: updates, Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()

	updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("a"), staticPod("b")}}
	poll.Eventually(t, "both pods running", func() bool {
		ps := a.Pods()
		return len(ps) == 2 && ps[0].Status.Phase == v1.PodRunning && ps[1].Status.Phase == v1.PodRunning
	})
	if got := len(a.ActivePods()); got != 2 {
		t.Fatalf("active pods %d, want 2", got)
	}
	var target *v1.Pod
	for _, p := range a.ActivePods() {
		if p.UID == "a" {
			target = p
		}
	}
	stopped := a.StopForShutdown(target, 3, func(st *v1.PodStatus) { shutdown.MarkTerminated(st, time.Now()) })
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("pod a not stopped")
	}
	if rt.count(rt.killed, "a") == 0 {
		t.Fatal("pod a not killed")
	}
	st, _ := a.statuses.Get("a")
	if st.Phase != v1.PodFailed || st.Reason != shutdown.Reason {
		t.Errorf("status of a: phase %s reason %q, want Failed %q", st.Phase, st.Reason, shutdown.Reason)
	}
	active := a.ActivePods()
	if len(active) != 1 || active[0].UID != "b" {
		t.Errorf("active pods after the stop: %v, want only b", active)
	}
	// A later sync does not start it again.
	synced := rt.count(rt.synced, "a")
	a.wakeups.Resync("a")
	poll.Eventually(t, "resync of a handled", func() bool { return rt.count(rt.killed, "a") >= 2 })
	if rt.count(rt.synced, "a") != synced {
		t.Errorf("pod a started again after its shutdown stop")
	}
	// Stopping it twice gives the same, closed channel.
	select {
	case <-a.StopForShutdown(target, 3, nil):
	default:
		t.Error("a second stop of a stopped pod is not done")
	}
}
