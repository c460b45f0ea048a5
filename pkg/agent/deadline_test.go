package agent

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/status"
)

// TestActiveDeadlineFailsAndStopsThePod: a pod past activeDeadlineSeconds
// is stopped and Failed with DeadlineExceeded, without waiting for a
// resync (its worker is asked to sync when the deadline passes). The
// deadline passes in fake time.
func TestActiveDeadlineFailsAndStopsThePod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rt := newFakeRuntime()
		ev := &eventingRuntime{fakeRuntime: rt}
		updates := make(chan config.PodUpdate, 10)
		a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour, ResyncPeriod: time.Hour}, Deps{Runtime: ev, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates, Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()

		p := staticPod("d")
		one := int64(1)
		p.Spec.ActiveDeadlineSeconds = &one
		updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{p}}
		poll.Eventually(t, "pod killed at its deadline", func() bool { return rt.count(rt.killed, "d") > 0 })
		poll.Eventually(t, "pod Failed", func() bool {
			st, ok := a.statuses.Get("d")
			return ok && st.Phase == v1.PodFailed && st.Reason == status.ReasonDeadlineExceeded
		})
		if got := ev.take(); len(got) != 1 || got[0] != "Normal DeadlineExceeded "+status.MessageDeadlineExceeded {
			t.Errorf("events %q, want one DeadlineExceeded", got)
		}
		if rt.count(rt.synced, "d") != 1 {
			t.Errorf("pod synced %d times, want once before its deadline", rt.count(rt.synced, "d"))
		}
		cancel()
		<-done
	})
}

// eventingRuntime is a fakeRuntime that records pod events.
type eventingRuntime struct {
	*fakeRuntime
	mu     sync.Mutex
	events []string
}

func (e *eventingRuntime) PodEvent(_ *v1.Pod, eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, eventType+" "+reason+" "+message)
}

func (e *eventingRuntime) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events
}
