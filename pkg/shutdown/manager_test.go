package shutdown

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// fakeLogind is logind without a bus: the test sends PrepareForShutdown
// and sees each lock taken and released on channels.
type fakeLogind struct {
	mu       sync.Mutex
	delay    time.Duration
	reloaded time.Duration // the delay after ReloadConfig
	reloads  int
	events   chan bool
	taken    chan struct{}
	released chan struct{}
}

func newFakeLogind(delay time.Duration) *fakeLogind {
	return &fakeLogind{delay: delay, reloaded: delay, events: make(chan bool),
		taken: make(chan struct{}, 4), released: make(chan struct{}, 4)}
}

func (f *fakeLogind) InhibitDelayMax() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delay, nil
}

func (f *fakeLogind) ReloadConfig() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	f.delay = f.reloaded
	return nil
}

type fakeLock struct {
	once     sync.Once
	released chan struct{}
}

func (l *fakeLock) Close() error {
	l.once.Do(func() { l.released <- struct{}{} })
	return nil
}

func (f *fakeLogind) Inhibit(who, why string) (io.Closer, error) {
	f.taken <- struct{}{}
	return &fakeLock{released: f.released}, nil
}

func (f *fakeLogind) PrepareForShutdown(ctx context.Context) (<-chan bool, error) {
	return f.events, nil
}

type kill struct {
	name  string
	grace int64
	st    v1.PodStatus
}

type fakePods struct {
	pods []*v1.Pod
	node *fakeNode
	mu   sync.Mutex
	// kills records each kill with the node's state at the time.
	kills        []kill
	nodeWasReady []bool
}

func (f *fakePods) Active() []*v1.Pod { return f.pods }

func (f *fakePods) Kill(p *v1.Pod, grace int64, mark func(*v1.PodStatus)) <-chan struct{} {
	st := v1.PodStatus{Phase: v1.PodRunning}
	mark(&st)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills = append(f.kills, kill{p.Name, grace, st})
	f.nodeWasReady = append(f.nodeWasReady, !f.node.shuttingDown())
	done := make(chan struct{})
	close(done)
	return done
}

type fakeNode struct {
	mu    sync.Mutex
	calls []bool
}

func (n *fakeNode) ShuttingDown(b bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, b)
}

func (n *fakeNode) shuttingDown() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.calls) > 0 && n.calls[len(n.calls)-1]
}

func startManager(t *testing.T, cfg Config, l Logind, pods *fakePods) (stop func() error) {
	t.Helper()
	m, err := NewManager(cfg, l, pods, pods.node)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestManagerShutdown(t *testing.T) {
	l := newFakeLogind(time.Minute)
	node := &fakeNode{}
	pods := &fakePods{node: node, pods: []*v1.Pod{
		testPod("critical", ptr(CriticalPriority), ptr(int64(30))),
		testPod("regular-long", nil, ptr(int64(60))),
		testPod("regular-short", ptr(int32(100)), ptr(int64(3))),
	}}
	stop := startManager(t, Config{GracePeriod: 30 * time.Second, CriticalGracePeriod: 10 * time.Second, DropInDir: t.TempDir()}, l, pods)
	<-l.taken

	l.events <- true
	<-l.released

	pods.mu.Lock()
	kills := pods.kills
	pods.mu.Unlock()
	if len(kills) != 3 {
		t.Fatalf("kills = %+v, want 3", kills)
	}
	want := map[string]int64{"regular-long": 20, "regular-short": 3, "critical": 10}
	for i, k := range kills {
		if k.grace != want[k.name] {
			t.Errorf("pod %s killed with grace %d, want %d", k.name, k.grace, want[k.name])
		}
		if (i == 2) != (k.name == "critical") {
			t.Errorf("kill order %v: critical pod must be last", kills)
		}
		if k.st.Phase != v1.PodFailed || k.st.Reason != Reason || k.st.Message != Message {
			t.Errorf("pod %s status = %s %q %q", k.name, k.st.Phase, k.st.Reason, k.st.Message)
		}
		if pods.nodeWasReady[i] {
			t.Errorf("pod %s killed before the node was marked shutting down", k.name)
		}
	}

	// Cancelled: the node is back, and the next shutdown is held again.
	l.events <- false
	<-l.taken
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	<-l.released // the lock is let go when nodelet stops
	node.mu.Lock()
	defer node.mu.Unlock()
	if len(node.calls) != 2 || !node.calls[0] || node.calls[1] {
		t.Errorf("node ShuttingDown calls = %v, want [true false]", node.calls)
	}
}

func TestManagerZeroCriticalPeriod(t *testing.T) {
	l := newFakeLogind(time.Minute)
	pods := &fakePods{node: &fakeNode{}, pods: []*v1.Pod{
		testPod("critical", ptr(CriticalPriority+1000), ptr(int64(30))),
		testPod("regular", nil, ptr(int64(30))),
	}}
	startManager(t, Config{GracePeriod: 20 * time.Second, DropInDir: t.TempDir()}, l, pods)
	<-l.taken
	l.events <- true
	<-l.released
	pods.mu.Lock()
	defer pods.mu.Unlock()
	want := map[string]int64{"regular": 20, "critical": 0}
	if len(pods.kills) != 2 || pods.kills[0].name != "regular" {
		t.Fatalf("kills = %+v, want regular then critical", pods.kills)
	}
	for _, k := range pods.kills {
		if k.grace != want[k.name] {
			t.Errorf("pod %s killed with grace %d, want %d", k.name, k.grace, want[k.name])
		}
	}
}

func TestManagerInhibitDelay(t *testing.T) {
	tests := []struct {
		name             string
		delay, reloaded  time.Duration
		wantReloads      int
		wantDropIn       string // "" : none written
		wantErrSubstring string
	}{
		{name: "long enough", delay: 45 * time.Second, reloaded: 45 * time.Second},
		{name: "raised by the drop-in", delay: 5 * time.Second, reloaded: 30 * time.Second,
			wantReloads: 1, wantDropIn: "[Login]\nInhibitDelayMaxSec=30\n"},
		{name: "logind keeps it short", delay: 5 * time.Second, reloaded: 5 * time.Second,
			wantReloads: 1, wantDropIn: "[Login]\nInhibitDelayMaxSec=30\n", wantErrSubstring: "InhibitDelayMaxSec is 5s, less than shutdownGracePeriod 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newFakeLogind(tt.delay)
			l.reloaded = tt.reloaded
			dir := t.TempDir()
			stop := startManager(t, Config{GracePeriod: 30 * time.Second, DropInDir: dir}, l, &fakePods{node: &fakeNode{}})
			if tt.wantErrSubstring == "" {
				<-l.taken
			}
			err := stop()
			if tt.wantErrSubstring == "" && err != nil {
				t.Fatalf("Run = %v", err)
			}
			if tt.wantErrSubstring != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErrSubstring)) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.wantErrSubstring)
			}
			if l.reloads != tt.wantReloads {
				t.Errorf("reloads = %d, want %d", l.reloads, tt.wantReloads)
			}
			data, err := os.ReadFile(filepath.Join(dir, DropInName))
			switch {
			case tt.wantDropIn == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("drop-in written: %q, %v", data, err)
			case tt.wantDropIn != "" && !strings.HasSuffix(string(data), tt.wantDropIn):
				t.Errorf("drop-in = %q, %v; want it to end with %q", data, err, tt.wantDropIn)
			}
		})
	}
}

func TestNewManagerRefuses(t *testing.T) {
	for _, cfg := range []Config{{}, {GracePeriod: time.Second, CriticalGracePeriod: 2 * time.Second}} {
		if _, err := NewManager(cfg, newFakeLogind(0), &fakePods{}, &fakeNode{}); err == nil {
			t.Errorf("NewManager(%+v) accepted", cfg)
		}
	}
}
