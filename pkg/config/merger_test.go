package config

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/pkg/pod"
)

// startMerger runs a merger until the test ends.
func startMerger(t *testing.T, m *Merger) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func next(t *testing.T, ch <-chan PodUpdate) PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no update")
	}
	return PodUpdate{}
}

// expectNoneNow checks, in a synctest bubble, that nothing is on ch once
// every goroutine of the bubble is idle: an update that was coming is there.
func expectNoneNow(t *testing.T, ch <-chan PodUpdate) {
	t.Helper()
	synctest.Wait()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %v from %q: %v", u.Op, u.Source, uids(u.Pods))
	default:
	}
}

// expectNone checks that nothing comes on ch for a while: for the sources
// whose I/O (inotify, HTTP) cannot run in a synctest bubble.
func expectNone(t *testing.T, ch <-chan PodUpdate) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %v from %q: %v", u.Op, u.Source, uids(u.Pods))
	case <-time.After(50 * time.Millisecond):
	}
}

type opPods struct {
	op   Operation
	src  string
	pods []string
}

func expect(t *testing.T, ch <-chan PodUpdate, want ...opPods) {
	t.Helper()
	for _, w := range want {
		u := next(t, ch)
		got := opPods{u.Op, u.Source, uids(u.Pods)}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("got %+v, want %+v", got, w)
		}
	}
}

func TestMergerIncremental(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMerger(Incremental, WithClock(func() time.Time { return t0 }))
		files := m.Channel("file")
		api := m.Channel("api")
		if got := m.Sources(); !got.Equal(sets.New("file", "api")) {
			t.Fatalf("Sources() = %v", sets.List(got))
		}
		if m.Channel("file") != files {
			t.Fatal("Channel() twice gave two channels")
		}
		startMerger(t, m)
		out := m.Updates()

		// First (empty) snapshot of a source: an empty ADD marks it seen.
		files <- PodUpdate{Op: SET}
		expect(t, out, opPods{ADD, "file", []string{}})
		files <- PodUpdate{Op: SET}
		expectNoneNow(t, out)

		files <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a"), testPod("b")}}
		expect(t, out, opPods{ADD, "file", []string{"a", "b"}})

		// The other source is independent: its empty first snapshot removes
		// nothing of "file".
		api <- PodUpdate{Op: SET, Source: "ignored"}
		expect(t, out, opPods{ADD, "api", []string{}})
		api <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("x")}}
		expect(t, out, opPods{ADD, "api", []string{"x"}})

		files <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", withImage("x:2")), testPod("c")}}
		expect(t, out,
			opPods{REMOVE, "file", []string{"b"}},
			opPods{ADD, "file", []string{"c"}},
			opPods{UPDATE, "file", []string{"a"}})

		api <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("x", running)}}
		expect(t, out, opPods{RECONCILE, "api", []string{"x"}})
		api <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("x", running, deleting)}}
		expect(t, out, opPods{DELETE, "api", []string{"x"}})
		api <- PodUpdate{Op: REMOVE, Pods: []*v1.Pod{testPod("x")}}
		expect(t, out, opPods{REMOVE, "api", []string{"x"}})
		expectNoneNow(t, out)
	})
}

func TestMergerAnnotatesAndCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMerger(Incremental, WithClock(func() time.Time { return t0 }))
		src := m.Channel("file")
		startMerger(t, m)

		in := testPod("a")
		src <- PodUpdate{Op: SET, Pods: []*v1.Pod{in}}
		u := next(t, m.Updates())
		got := u.Pods[0]
		if got == in {
			t.Fatal("merger handed out the source's pod")
		}
		if got.Annotations[pod.ConfigSourceAnnotationKey] != "file" ||
			got.Annotations[pod.ConfigFirstSeenAnnotationKey] != t0.Format(time.RFC3339Nano) {
			t.Errorf("annotations = %v", got.Annotations)
		}
		// The consumer owns what it got: changing it must not leak into the
		// merger's state (an identical snapshot stays a no-op).
		got.Spec.Containers[0].Image = "mutated"
		got.Annotations["k"] = "v"
		src <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}}
		expectNoneNow(t, m.Updates())
	})
}

func TestMergerChannelAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMerger(Incremental)
		startMerger(t, m)
		late := m.Channel("http")
		late <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}}
		expect(t, m.Updates(), opPods{ADD, "http", []string{"a"}})
	})
}

func TestMergerSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMerger(Snapshot)
		files := m.Channel("file")
		api := m.Channel("api")
		startMerger(t, m)
		out := m.Updates()

		files <- PodUpdate{Op: SET}
		expect(t, out, opPods{SET, pod.AllSource, []string{}})
		files <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}}
		expect(t, out, opPods{SET, pod.AllSource, []string{"a"}})
		api <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("b")}}
		expect(t, out, opPods{SET, pod.AllSource, []string{"a", "b"}})
		// No change, no snapshot.
		api <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("b")}}
		expectNoneNow(t, out)
		// A status-only change is a change of the merged state too.
		api <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("b", running)}}
		u := next(t, out)
		if u.Pods[1].Status.Phase != v1.PodRunning {
			t.Errorf("snapshot has stale status %q", u.Pods[1].Status.Phase)
		}
	})
}

// A consumer that does not read must not block the sources in snapshot mode:
// the unread snapshot is replaced by the newest.
func TestMergerSnapshotCoalesces(t *testing.T) {
	m := NewMerger(Snapshot)
	src := m.Channel("file")
	startMerger(t, m)
	for i := range 50 {
		pods := []*v1.Pod{}
		for j := 0; j <= i; j++ {
			pods = append(pods, testPod(string(rune('A'+j))))
		}
		select {
		case src <- PodUpdate{Op: SET, Pods: pods}:
		case <-time.After(5 * time.Second):
			t.Fatalf("source blocked at snapshot %d", i)
		}
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case u := <-m.Updates():
			if len(u.Pods) == 50 {
				return
			}
		case <-deadline:
			t.Fatal("never saw the latest snapshot")
		}
	}
}

// In incremental mode a slow consumer gets every update, in order.
func TestMergerIncrementalSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMerger(Incremental, WithOutputBuffer(1))
		src := m.Channel("file")
		startMerger(t, m)
		go func() {
			for i := range 20 {
				src <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod(string(rune('a' + i)))}}
			}
		}()
		expect(t, m.Updates(), opPods{ADD, "file", []string{"a"}})
		for i := 1; i < 20; i++ {
			synctest.Wait() // the consumer is slowest: the merger is blocked on it
			expect(t, m.Updates(),
				opPods{REMOVE, "file", []string{string(rune('a' + i - 1))}},
				opPods{ADD, "file", []string{string(rune('a' + i))}})
		}
	})
}

func TestMergerStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMerger(Incremental, WithOutputBuffer(0))
		src := m.Channel("file")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.Run(ctx)
		}()
		// Nobody reads: Run is blocked on the output when we cancel.
		src <- PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}}
		synctest.Wait()
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	})
}
