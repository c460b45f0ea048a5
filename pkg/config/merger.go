package config

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/pod"
)

// Mode selects what the Merger emits.
type Mode int

const (
	// Incremental emits, per source input, REMOVE, ADD, UPDATE, DELETE and
	// RECONCILE updates for that source (the sync loop's mode).
	Incremental Mode = iota
	// Snapshot emits one SET with every pod of every source after each
	// change (Source == pod.AllSource).
	Snapshot
)

func (m Mode) String() string {
	if m == Snapshot {
		return "Snapshot"
	}
	return "Incremental"
}

const (
	// defaultOutputBuffer absorbs bursts (a manifest dir of many pods, an API
	// relist) before the merger has to wait for the consumer.
	defaultOutputBuffer = 100
	// sourceBuffer lets a source hand over a snapshot without waiting for the
	// merger to finish the previous one.
	sourceBuffer = 10
)

// MergerOption configures a Merger.
type MergerOption func(*Merger)

// WithClock sets the clock used for the config.seen annotation (tests).
func WithClock(now func() time.Time) MergerOption {
	return func(m *Merger) { m.now = now }
}

// WithOutputBuffer sets the capacity of the incremental output channel.
func WithOutputBuffer(n int) MergerOption {
	return func(m *Merger) { m.outputBuffer = n }
}

// Merger combines the pods of all sources into one stream of changes. One
// goroutine (Run) owns the per-source state; sources talk to it only through
// the channels Channel returns.
//
// Backpressure: in Incremental mode every update matters, so the output is a
// buffered channel and when it is full Run blocks, and in turn the sources
// block on their channels (they all select on their context, so shutdown
// still works). In Snapshot mode only the latest snapshot matters, so an
// unread snapshot is replaced by the newer one and Run never blocks.
type Merger struct {
	mode         Mode
	now          func() time.Time
	outputBuffer int
	in           chan sourcedUpdate
	out          chan PodUpdate

	mu         sync.Mutex // guards channels, running and runCtx
	channels   map[string]chan PodUpdate
	running    bool
	runCtx     context.Context // set while Run runs: channels registered late get a forwarder at once
	forwarders sync.WaitGroup

	// pods is the state per source, keyed by UID. Owned by Run.
	pods map[string]map[types.UID]*v1.Pod
}

type sourcedUpdate struct {
	source string
	update PodUpdate
}

// NewMerger returns a Merger emitting in the given mode.
func NewMerger(mode Mode, opts ...MergerOption) *Merger {
	m := &Merger{
		mode:         mode,
		now:          time.Now,
		outputBuffer: defaultOutputBuffer,
		in:           make(chan sourcedUpdate),
		channels:     map[string]chan PodUpdate{},
		pods:         map[string]map[types.UID]*v1.Pod{},
	}
	for _, o := range opts {
		o(m)
	}
	if mode == Snapshot {
		m.out = make(chan PodUpdate, 1)
	} else {
		m.out = make(chan PodUpdate, max(m.outputBuffer, 0))
	}
	return m
}

// Channel registers a source and returns the channel it sends its updates
// into; the Source field of those updates is ignored. Calling it again for
// the same source returns the same channel. Register sources before Run so
// the consumer knows from Sources() which ones to wait for; a channel
// registered while Run runs works too.
func (m *Merger) Channel(source string) chan<- PodUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch, ok := m.channels[source]; ok {
		return ch
	}
	ch := make(chan PodUpdate, sourceBuffer)
	m.channels[source] = ch
	if m.runCtx != nil {
		m.startForwarder(m.runCtx, source, ch)
	}
	return ch
}

// Sources returns the names of the registered sources.
func (m *Merger) Sources() sets.Set[string] {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := sets.New[string]()
	for name := range m.channels {
		s.Insert(name)
	}
	return s
}

// Updates is the merged output. Pods in it are copies the consumer may keep
// and modify.
func (m *Merger) Updates() <-chan PodUpdate { return m.out }

// Run merges until ctx is done. Call it once.
func (m *Merger) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		klog.ErrorS(nil, "Merger.Run called more than once; ignoring")
		return nil
	}
	m.running = true
	m.runCtx = ctx
	for name, ch := range m.channels {
		m.startForwarder(ctx, name, ch)
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.runCtx = nil
		m.mu.Unlock()
		m.forwarders.Wait()
	}()

	for {
		select {
		case <-ctx.Done():
			return nil
		case in := <-m.in:
			if !m.handle(ctx, in) {
				return nil
			}
		}
	}
}

// startForwarder pipes one source channel into the merger's input, naming the
// source. Called with m.mu held.
func (m *Merger) startForwarder(ctx context.Context, source string, ch <-chan PodUpdate) {
	m.forwarders.Add(1)
	go func() {
		defer m.forwarders.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-ch:
				if !ok {
					return
				}
				select {
				case m.in <- sourcedUpdate{source: source, update: u}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
}

// handle applies one input and emits the result. It returns false when ctx
// ended while waiting for the consumer.
func (m *Merger) handle(ctx context.Context, in sourcedUpdate) bool {
	cur, known := m.pods[in.source]
	next, ch, rejected := applyUpdate(cur, in.update, in.source, m.now())
	for _, err := range rejected {
		klog.ErrorS(err, "Ignoring pod from source", "source", in.source)
	}
	m.pods[in.source] = next
	klog.V(4).InfoS("Merged pod update", "source", in.source, "op", in.update.Op,
		"removes", len(ch.removes), "adds", len(ch.adds), "updates", len(ch.updates),
		"deletes", len(ch.deletes), "reconciles", len(ch.reconciles))

	if m.mode == Snapshot {
		if !ch.empty() || !known {
			m.publishSnapshot()
		}
		return true
	}
	for _, u := range ch.podUpdates(in.source, !known) {
		u.Pods = copyPods(u.Pods)
		select {
		case m.out <- u:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// publishSnapshot replaces any snapshot the consumer has not read yet with
// the current one. Run is the only sender and the channel holds one, so the
// send after draining cannot block.
func (m *Merger) publishSnapshot() {
	var all []*v1.Pod
	for _, pods := range m.pods {
		for _, p := range pods {
			all = append(all, p)
		}
	}
	sortPods(all)
	u := PodUpdate{Op: SET, Source: pod.AllSource, Pods: copyPods(all)}
	select {
	case <-m.out:
	default:
	}
	m.out <- u
}

func copyPods(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}
