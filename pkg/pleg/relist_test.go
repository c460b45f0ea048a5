package pleg

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, cur map[types.UID]string
		want     []types.UID
	}{
		{"same", map[types.UID]string{"a": "x"}, map[types.UID]string{"a": "x"}, nil},
		{"changed", map[types.UID]string{"a": "x"}, map[types.UID]string{"a": "y"}, []types.UID{"a"}},
		{"appeared", map[types.UID]string{}, map[types.UID]string{"a": "x"}, []types.UID{"a"}},
		{"vanished", map[types.UID]string{"a": "x"}, map[types.UID]string{}, []types.UID{"a"}},
	}
	for _, tc := range tests {
		got := Diff(tc.old, tc.cur)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
}

type fakeLister struct {
	mu   sync.Mutex
	pods []*runtime.Pod
}

func (f *fakeLister) ListPods(context.Context) ([]*runtime.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods, nil
}

func (f *fakeLister) set(p ...*runtime.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = p
}

func TestRelisterReportsOnlyChangedPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := func(uid types.UID, st runtime.ContainerState) *runtime.Pod {
		return &runtime.Pod{UID: uid, Containers: []runtime.ContainerRef{{ID: string(uid) + "-c", State: st}}}
	}
	l := &fakeLister{}
	l.set(running("a", runtime.ContainerStateRunning), running("b", runtime.ContainerStateRunning))
	r := New(l, 5*time.Millisecond)
	go r.Run(ctx)

	got := map[types.UID]bool{}
	for range 2 {
		got[<-r.Changed()] = true
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("initial listing reported %v", got)
	}
	l.set(running("a", runtime.ContainerStateRunning), running("b", runtime.ContainerStateExited))
	select {
	case uid := <-r.Changed():
		if uid != "b" {
			t.Fatalf("reported %s, want b", uid)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exit not noticed")
	}
	select {
	case uid := <-r.Changed():
		t.Fatalf("spurious change for %s", uid)
	case <-time.After(50 * time.Millisecond):
	}
	if err := r.Healthy(); err != nil {
		t.Fatal(err)
	}
	if len(r.Snapshot()) != 2 {
		t.Fatalf("snapshot has %d pods", len(r.Snapshot()))
	}
}
