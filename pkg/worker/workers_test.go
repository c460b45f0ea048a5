package worker

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func pod(uid, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, ResourceVersion: rv}}
}

func TestCoalesce(t *testing.T) {
	tests := []struct {
		name     string
		old, new Work
		wantType UpdateType
		wantRV   string
	}{
		{"sync after update keeps update, newest pod", Work{Pod: pod("a", "1"), Type: Update}, Work{Pod: pod("a", "2"), Type: Sync}, Update, "2"},
		{"update replaces sync", Work{Pod: pod("a", "1"), Type: Sync}, Work{Pod: pod("a", "2"), Type: Update}, Update, "2"},
		{"kill wins over update", Work{Pod: pod("a", "1"), Type: Update}, Work{Pod: pod("a", "2"), Type: Kill}, Kill, "2"},
		{"update does not cancel kill", Work{Pod: pod("a", "1"), Type: Kill}, Work{Pod: pod("a", "2"), Type: Update}, Kill, "2"},
		{"re-create cancels kill", Work{Pod: pod("a", "1"), Type: Kill}, Work{Pod: pod("a", "2"), Type: Create}, Create, "2"},
	}
	for _, tc := range tests {
		old, nw := tc.old, tc.new
		got := coalesce(&old, &nw)
		if got.Type != tc.wantType || got.Pod.ResourceVersion != tc.wantRV {
			t.Errorf("%s: got %v rv %s, want %v rv %s", tc.name, got.Type, got.Pod.ResourceVersion, tc.wantType, tc.wantRV)
		}
	}
	if got := coalesce(nil, &Work{Type: Sync}); got.Type != Sync {
		t.Errorf("nil old: got %v", got.Type)
	}
}

// TestCoalesceRelisted: a sync stays skippable only while every request
// merged into it came from the relister.
func TestCoalesceRelisted(t *testing.T) {
	seen := func(fp string) *Relisted { return &Relisted{Fingerprint: fp} }
	tests := []struct {
		name     string
		old      *Work
		new      Work
		wantType UpdateType
		wantFP   string // "" = not skippable
	}{
		{"first relist", nil, Work{Type: Sync, Relisted: seen("x")}, Sync, "x"},
		{"newer relist wins", &Work{Type: Sync, Relisted: seen("x")}, Work{Type: Sync, Relisted: seen("y")}, Sync, "y"},
		{"plain sync then relist", &Work{Type: Sync}, Work{Type: Sync, Relisted: seen("y")}, Sync, ""},
		{"relist then plain sync", &Work{Type: Sync, Relisted: seen("x")}, Work{Type: Sync}, Sync, ""},
		{"create then relist", &Work{Type: Create}, Work{Type: Sync, Relisted: seen("y")}, Create, ""},
		{"relist then update", &Work{Type: Sync, Relisted: seen("x")}, Work{Type: Update}, Update, ""},
	}
	for _, tc := range tests {
		tc.new.Pod = pod("a", "1")
		if tc.old != nil {
			tc.old.Pod = pod("a", "1")
		}
		got := coalesce(tc.old, &tc.new)
		fp := ""
		if got.Relisted != nil {
			fp = got.Relisted.Fingerprint
		}
		if got.Type != tc.wantType || fp != tc.wantFP {
			t.Errorf("%s: got %v %q, want %v %q", tc.name, got.Type, fp, tc.wantType, tc.wantFP)
		}
	}
}

type recorder struct {
	mu    sync.Mutex
	calls []Work
	ch    chan Work
}

func (r *recorder) sync(block map[types.UID]chan struct{}) SyncFunc {
	return func(ctx context.Context, w Work) Result {
		r.mu.Lock()
		r.calls = append(r.calls, w)
		r.mu.Unlock()
		r.ch <- w
		if c, ok := block[w.Pod.UID]; ok {
			select {
			case <-c:
			case <-ctx.Done():
			}
		}
		return Result{}
	}
}

func recv(t *testing.T, ch chan Work) Work {
	t.Helper()
	select {
	case w := <-ch:
		return w
	case <-time.After(5 * time.Second):
		t.Fatal("no sync happened")
	}
	return Work{}
}

func TestSlowPodDoesNotBlockOthers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	r := &recorder{ch: make(chan Work, 10)}
	ws := New(ctx, r.sync(map[types.UID]chan struct{}{"slow": release}), Options{ResyncPeriod: time.Hour})
	ws.Update(Work{Pod: pod("slow", "1"), Type: Create})
	recv(t, r.ch)
	ws.Update(Work{Pod: pod("fast", "1"), Type: Create})
	if w := recv(t, r.ch); w.Pod.UID != "fast" {
		t.Fatalf("got sync of %s, want fast", w.Pod.UID)
	}
	close(release)
	cancel()
	ws.Wait()
}

func TestUpdatesCoalesceWhileSyncing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release := make(chan struct{})
		r := &recorder{ch: make(chan Work, 10)}
		ws := New(ctx, r.sync(map[types.UID]chan struct{}{"a": release}), Options{ResyncPeriod: time.Hour})
		ws.Update(Work{Pod: pod("a", "1"), Type: Create})
		recv(t, r.ch)
		for i := 2; i <= 5; i++ {
			ws.Update(Work{Pod: pod("a", string(rune('0'+i))), Type: Update})
		}
		release <- struct{}{} // first sync returns
		w := recv(t, r.ch)
		if w.Pod.ResourceVersion != "5" {
			t.Fatalf("coalesced sync got rv %s, want 5", w.Pod.ResourceVersion)
		}
		close(release)
		synctest.Wait() // the worker is idle: an extra sync would be in r.ch
		select {
		case w := <-r.ch:
			t.Fatalf("unexpected extra sync %v", w.Pod.ResourceVersion)
		default:
		}
		cancel()
		ws.Wait()
	})
}

func TestKillForgetEndsWorkerAndKilledPodStaysDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := &recorder{ch: make(chan Work, 10)}
		forgotten := make(chan types.UID, 1)
		ws := New(ctx, r.sync(nil), Options{ResyncPeriod: time.Hour, OnForgotten: func(uid types.UID) { forgotten <- uid }})

		ws.Update(Work{Pod: pod("a", "1"), Type: Create})
		recv(t, r.ch)
		ws.Update(Work{Pod: pod("a", "1"), Type: Kill})
		recv(t, r.ch)
		ws.Update(Work{Pod: pod("a", "1"), Type: Sync})
		synctest.Wait() // the worker is idle: a sync would be in r.ch
		select {
		case w := <-r.ch:
			t.Fatalf("killed pod was synced again: %v", w.Type)
		default:
		}
		ws.Update(Work{Pod: pod("a", "1"), Type: Kill, Forget: true})
		recv(t, r.ch)
		select {
		case uid := <-forgotten:
			if uid != "a" {
				t.Fatalf("forgot %s", uid)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("worker not forgotten")
		}
		if ws.Has("a") {
			t.Fatal("worker still registered")
		}
		// The same UID coming back gets a fresh worker.
		ws.Update(Work{Pod: pod("a", "2"), Type: Create})
		if w := recv(t, r.ch); w.Type != Create {
			t.Fatalf("got %v, want create", w.Type)
		}
		cancel()
		ws.Wait()
	})
}

func TestRetryAfterResyncs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan Work, 10)
	n := 0
	ws := New(ctx, func(ctx context.Context, w Work) Result {
		n++
		ch <- w
		if n == 1 {
			return Result{RetryAfter: 10 * time.Millisecond}
		}
		return Result{}
	}, Options{ResyncPeriod: time.Hour})
	ws.Update(Work{Pod: pod("a", "1"), Type: Create})
	recv(t, ch)
	if w := recv(t, ch); w.Type != Sync || w.Pod.ResourceVersion != "1" {
		t.Fatalf("retry got %v rv %s", w.Type, w.Pod.ResourceVersion)
	}
	cancel()
	ws.Wait()
}

func TestKillerRunsKillsInParallelOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	started := make(chan types.UID, 10)
	k := NewKiller(ctx, func(ctx context.Context, p *runtime.Pod) error {
		started <- p.UID
		<-release
		return nil
	})
	k.Kill(&runtime.Pod{UID: "slow"})
	k.Kill(&runtime.Pod{UID: "slow"}) // deduplicated
	k.Kill(&runtime.Pod{UID: "other"})
	got := map[types.UID]bool{}
	for range 2 {
		select {
		case uid := <-started:
			got[uid] = true
		case <-time.After(5 * time.Second):
			t.Fatal("kill did not start")
		}
	}
	if !got["slow"] || !got["other"] || !k.Killing("slow") {
		t.Fatalf("got %v", got)
	}
	close(release)
	k.Wait()
	if k.Killing("slow") || len(started) != 0 {
		t.Fatalf("duplicate or unfinished kills")
	}
}

// TestKillCancelsSyncInProgress: a kill does not wait for a sync that is
// stuck (a postStart hook that never returns): the sync's context ends.
func TestKillCancelsSyncInProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	kills := make(chan Work, 1)
	ws := New(ctx, func(ctx context.Context, w Work) Result {
		if w.Type == Kill {
			kills <- w
			return Result{}
		}
		close(started)
		<-ctx.Done() // stuck until cancelled
		return Result{Err: ctx.Err()}
	}, Options{ResyncPeriod: time.Hour})
	ws.Update(Work{Pod: pod("a", "1"), Type: Create})
	<-started
	ws.Update(Work{Pod: pod("a", "1"), Type: Kill})
	select {
	case <-kills:
	case <-time.After(30 * time.Second):
		t.Fatal("kill waited for the stuck sync")
	}
}

// TestPeriodicMarksOnlyThePlainResync: the timer's resync after a sync that
// asked for nothing is Periodic; a retry (RetryAfter, error back-off) is
// not, nor is anything coalesced with another request.
func TestPeriodicMarksOnlyThePlainResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var (
			mu  sync.Mutex
			got []Work
		)
		results := []Result{{RetryAfter: time.Second}, {}, {Err: context.DeadlineExceeded}, {}, {}}
		ws := New(ctx, func(ctx context.Context, w Work) Result {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, w)
			if len(got) <= len(results) {
				return results[len(got)-1]
			}
			return Result{}
		}, Options{ResyncPeriod: time.Minute, ErrorBackoff: time.Second})
		ws.Update(Work{Pod: pod("a", "1"), Type: Create})
		for n := 0; n < len(results)+1; {
			time.Sleep(time.Second)
			synctest.Wait()
			mu.Lock()
			n = len(got)
			mu.Unlock()
		}
		cancel()
		ws.Wait()
		// 0 create, 1 retry, 2 periodic (after a sync that asked for
		// nothing), 3 error back-off retry, 4 periodic, 5 periodic.
		want := []bool{false, false, true, false, true, true}
		for i, w := range want {
			if got[i].Periodic != w {
				t.Errorf("sync %d (%v): Periodic = %v, want %v", i, got[i].Type, got[i].Periodic, w)
			}
		}
	})
	for _, tc := range []struct {
		name     string
		old, new Work
	}{
		{"periodic then sync", Work{Type: Sync, Periodic: true}, Work{Type: Sync}},
		{"periodic then update", Work{Type: Sync, Periodic: true}, Work{Type: Update}},
		{"periodic kill then update", Work{Type: Kill, Periodic: true}, Work{Type: Update}},
		{"periodic then relist", Work{Type: Sync, Periodic: true}, Work{Type: Sync, Relisted: &Relisted{Fingerprint: "x"}}},
	} {
		tc.old.Pod, tc.new.Pod = pod("a", "1"), pod("a", "2")
		if got := coalesce(&tc.old, &tc.new); got.Periodic || got.Relisted != nil {
			t.Errorf("%s: coalesced into %+v, want neither periodic nor relisted", tc.name, got)
		}
	}
}
