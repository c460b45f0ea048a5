package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/security"
	"github.com/nodelet/nodelet/pkg/status"
)

// TestWakeupsFromOtherGoroutines is the regression test of a data race
// that could crash nodelet: the volume refresher's goroutines asked for
// resyncs by calling into the loop's admission, which reads and writes the
// refused-pod set the loop owns, while the loop admitted and refused pods.
// Under -race the old path failed at once; requests now reach the loop
// through Wakeups and are acted on there.
func TestWakeupsFromOtherGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	updates := make(chan config.PodUpdate, 10)
	wake := NewWakeups()
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour, ResyncPeriod: time.Hour},
		Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates,
			Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(), Wakeups: wake,
			Admit: func(p *v1.Pod, _ []*v1.Pod) *security.Rejection {
				if p.Name[0] == 'r' {
					return &security.Rejection{Reason: "Refused", Message: "test"}
				}
				return nil
			}})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()

	const n = 30
	var senders sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				uid := types.UID(fmt.Sprintf("%c%d", "ra"[(i+g)%2], i%n))
				if g%2 == 0 {
					wake.Resync(uid)
				} else {
					wake.ProbeChanged(uid)
				}
			}
		}()
	}
	for i := range n {
		refused, admitted := staticPod(fmt.Sprintf("r%d", i)), staticPod(fmt.Sprintf("a%d", i))
		updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{refused, admitted}}
		if i%3 == 0 {
			updates <- config.PodUpdate{Op: config.REMOVE, Source: pod.FileSource, Pods: []*v1.Pod{refused}}
		}
	}
	poll.Eventually(t, "every admitted pod synced", func() bool {
		for i := range n {
			if rt.count(rt.synced, types.UID(fmt.Sprintf("a%d", i))) == 0 {
				return false
			}
		}
		return true
	})
	close(stop)
	senders.Wait()

	// A request for a pod in sync runs one more sync; refused pods never run.
	before := rt.count(rt.synced, "a1")
	wake.Resync("a1")
	poll.Eventually(t, "a resync request reaches the worker", func() bool { return rt.count(rt.synced, "a1") > before })
	for i := range n {
		if c := rt.count(rt.synced, types.UID(fmt.Sprintf("r%d", i))); c != 0 {
			t.Fatalf("refused pod r%d synced %d times", i, c)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWakeupsCoalesce: requests for the same pod pending together are taken
// once, and a sender never blocks on a loop that is busy.
func TestWakeupsCoalesce(t *testing.T) {
	w := NewWakeups()
	for range 100 {
		w.Resync("a")
		w.ProbeChanged("b")
	}
	w.Resync("c")
	select {
	case <-w.Ready():
	default:
		t.Fatal("no signal for pending requests")
	}
	resyncs, probes := w.take()
	if fmt.Sprint(resyncs) != "[a c]" || fmt.Sprint(probes) != "[b]" {
		t.Fatalf("took resyncs %v probes %v, want [a c] [b]", resyncs, probes)
	}
	if r, p := w.take(); len(r)+len(p) != 0 {
		t.Fatalf("requests taken twice: %v %v", r, p)
	}
}
