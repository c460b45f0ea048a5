// Package agent is nodelet's sync loop. It takes pod updates from the config
// merger and runtime changes from the relister and turns each into work for
// exactly the pods concerned; it tracks which sources have been seen, and its
// housekeeping stops what runs on the node but is no longer wanted. It never
// waits for a pod to sync or stop: that is the workers' and the killer's job.
package agent

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/status"
	"github.com/nodelet/nodelet/pkg/worker"
)

// PodRuntime is what the agent needs of the container runtime.
type PodRuntime interface {
	PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*runtime.PodStatus, error)
	SyncPod(ctx context.Context, pod *v1.Pod, status *runtime.PodStatus) runtime.SyncResult
	KillPod(ctx context.Context, pod *v1.Pod, status *runtime.PodStatus, gracePeriod *int64) error
	// RemovePod removes what is left of a pod that stopped: dead containers
	// and sandboxes, its directory under the root dir, its volumes.
	RemovePod(ctx context.Context, status *runtime.PodStatus) error
	// InSync reports, without runtime calls, whether SyncPod would change
	// nothing given status; stopped is the newest sandbox an earlier stop
	// of the whole pod stopped ("": none known), so that stopping a
	// finished pod again does not count.
	InSync(pod *v1.Pod, status *runtime.PodStatus, stopped string) bool
	// PodEvent records an event on a pod (a pod stopped past its
	// deadline), the same way the runtime records its own.
	PodEvent(pod *v1.Pod, eventType, reason, message string)
}

// Relister reports runtime changes and keeps the latest runtime listing.
type Relister interface {
	Run(ctx context.Context) error
	Changed() <-chan pleg.Change
	Snapshot() []*runtime.Pod
	// Absent reports whether the latest listing began after since and
	// showed nothing of uid.
	Absent(uid types.UID, since time.Time) bool
	// ListedSince reports whether the latest listing began after t.
	ListedSince(t time.Time) bool
	// Listed returns the pod's fingerprint in the latest listing
	// (pleg.Fingerprint) and when that listing began; ok is false when
	// the listing did not show the pod (or there is none).
	Listed(uid types.UID) (fingerprint string, began time.Time, ok bool)
}

// Housekeeper is periodic node-level cleanup run from housekeeping (container
// garbage collection); wanted tells which pod UIDs must keep their data.
type Housekeeper interface {
	GarbageCollect(ctx context.Context, wanted func(types.UID) bool) error
}

// Config holds the agent's settings.
type Config struct {
	NodeName string
	HostIP   string
	// HostIPs are the node's IPs, HostIP first (two on a dual-stack node);
	// empty: HostIP alone.
	HostIPs []string
	// RuntimeName prefixes container IDs in statuses ("containerd").
	RuntimeName        string
	ResyncPeriod       time.Duration
	HousekeepingPeriod time.Duration
	// ContainerGCPeriod is how often Housekeeper and the pod directory
	// cleanup run (0: never).
	ContainerGCPeriod time.Duration
	// RootDir holds a directory per pod (<RootDir>/pods/<uid>) that is
	// removed once nothing of the pod is wanted or runs.
	RootDir string
}

// Deps are what the agent is built from. Runtime, Relister, Updates, Pods
// and Statuses are required; the rest are optional parts.
type Deps struct {
	Runtime  PodRuntime
	Relister Relister
	// Updates are the merged pod updates of Sources, the names registered
	// with the merger.
	Updates  <-chan config.PodUpdate
	Sources  sets.Set[string]
	Pods     *pod.Manager
	Statuses *status.Cache

	// Wakeups carries sync requests from other goroutines (nil: none come).
	Wakeups *Wakeups
	// Prober runs the containers' probes (nil: no probes run).
	Prober Prober
	// Admit checks new pods before they first run (nil: all admitted). A
	// refused pod never runs: it is given the Failed phase with the
	// refusal's reason, as upstream's admission does, and an event on
	// Recorder.
	Admit AdmitFunc
	// Preempt chooses the active pods to stop so that a critical pod Admit
	// refused for want of resources fits (nil: no preemption).
	Preempt  PreemptFunc
	Recorder record.EventRecorder
	// Housekeeper adds container garbage collection to housekeeping.
	Housekeeper Housekeeper
	// Cluster makes the agent a cluster member (nil: standalone).
	Cluster Cluster
	// Tracer starts the spans of pod syncs (nil: none).
	Tracer trace.Tracer
}

// Agent owns the sync loop.
type Agent struct {
	cfg      Config
	rt       PodRuntime
	relister Relister
	updates  <-chan config.PodUpdate
	sources  sets.Set[string]
	gc       Housekeeper
	cluster  Cluster // nil when standalone
	prober   Prober  // nil: no probes run
	wakeups  *Wakeups
	tracer   trace.Tracer

	pods     *pod.Manager
	statuses *status.Cache
	workers  *worker.Workers
	killer   *worker.Killer

	// admit checks new pods (nil: all admitted); rejected are the UIDs of
	// the pods it refused, which never run. Sync loop goroutine only:
	// other goroutines reach the loop through wakeups.
	admit    AdmitFunc
	preempt  PreemptFunc
	recorder record.EventRecorder
	rejected sets.Set[types.UID]

	// observed is each pod worker's last runtime read, against which
	// relist events are checked.
	observed observations
	// shutdowns are the pods stopped for a node shutdown.
	shutdowns shutdownStops
	// slowFirstSync is how long a new pod's first sync (an image pull,
	// mostly) runs before the status it started from is published.
	slowFirstSync time.Duration

	mu   sync.Mutex
	seen sets.Set[string] // sources whose first update the loop has processed
}

// New builds an agent; nothing of it runs before Run.
func New(cfg Config, deps Deps) (*Agent, error) {
	switch {
	case deps.Runtime == nil:
		return nil, errors.New("agent: no pod runtime")
	case deps.Relister == nil:
		return nil, errors.New("agent: no relister")
	case deps.Updates == nil:
		return nil, errors.New("agent: no pod updates channel")
	case deps.Pods == nil:
		return nil, errors.New("agent: no pod manager")
	case deps.Statuses == nil:
		return nil, errors.New("agent: no status cache")
	}
	if cfg.HousekeepingPeriod <= 0 {
		cfg.HousekeepingPeriod = 2 * time.Second
	}
	if deps.Sources == nil {
		deps.Sources = sets.New[string]()
	}
	if deps.Wakeups == nil {
		deps.Wakeups = NewWakeups()
	}
	if deps.Tracer == nil {
		deps.Tracer = noop.NewTracerProvider().Tracer("")
	}
	return &Agent{
		cfg: cfg, rt: deps.Runtime, relister: deps.Relister, updates: deps.Updates, sources: deps.Sources,
		gc: deps.Housekeeper, cluster: deps.Cluster, prober: deps.Prober, wakeups: deps.Wakeups,
		admit: deps.Admit, preempt: deps.Preempt, recorder: deps.Recorder, tracer: deps.Tracer,
		pods: deps.Pods, statuses: deps.Statuses, seen: sets.New[string](), rejected: sets.New[types.UID](),
		slowFirstSync: defaultSlowFirstSync,
	}, nil
}

// Run runs the loop until ctx is done, then waits for the workers to stop.
// Containers keep running when nodelet stops: the next nodelet adopts them.
func (a *Agent) Run(ctx context.Context) error {
	a.workers = worker.New(ctx, a.syncPod, worker.Options{
		ResyncPeriod: a.cfg.ResyncPeriod,
		OnForgotten:  a.forget,
	})
	a.killer = worker.NewKiller(ctx, a.killLeftover)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = a.relister.Run(ctx) }()
	go func() { defer wg.Done(); a.housekeepingLoop(ctx) }()
	defer func() {
		wg.Wait()
		a.workers.Wait()
		a.killer.Wait()
	}()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.wakeups.Ready():
			a.handleWakeups()
		case u, ok := <-a.updates:
			if !ok {
				return nil
			}
			a.handleUpdate(u)
		case c := <-a.relister.Changed():
			if a.rejected.Has(c.UID) {
				a.stopRefused(c.UID)
			} else if p, ok := a.pods.PodByUID(c.UID); ok {
				a.workers.Update(worker.Work{Pod: p, MirrorPod: a.mirrorOf(p), Type: worker.Sync,
					Relisted: &worker.Relisted{Fingerprint: c.Fingerprint, At: c.ListedAt}})
			}
		}
	}
}

func (a *Agent) handleUpdate(u config.PodUpdate) {
	a.markSeen(u.Source)
	klog.V(3).InfoS("Pod update", "op", u.Op, "source", u.Source, "pods", len(u.Pods))
	pods := u.Pods
	if u.Op == config.ADD && len(pods) > 1 {
		// Admission judges each pod beside those admitted before it: the
		// oldest first, as upstream, so a restart admits the same pods.
		pods = slices.Clone(pods)
		slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		})
	}
	for _, p := range pods {
		if pod.IsMirror(p) {
			a.handleMirror(u.Op, p)
			continue
		}
		switch u.Op {
		case config.ADD:
			a.pods.AddOrUpdatePod(p)
			a.dispatch(p, worker.Create)
		case config.UPDATE:
			a.pods.AddOrUpdatePod(p)
			a.dispatch(p, worker.Update)
		case config.RECONCILE:
			a.pods.AddOrUpdatePod(p)
			if status.ReadinessGatesChanged(p) {
				// A readiness gate's condition changed: the pod's Ready
				// condition follows.
				a.dispatch(p, worker.Sync)
			}
		case config.DELETE:
			a.pods.AddOrUpdatePod(p)
			a.workers.Update(worker.Work{Pod: p, MirrorPod: a.mirrorOf(p), Type: worker.Kill, GracePeriod: p.DeletionGracePeriodSeconds})
		case config.REMOVE:
			a.pods.RemovePod(p)
			if a.forgetRejected(p.UID) {
				a.forget(p.UID)
				continue
			}
			a.workers.Update(worker.Work{Pod: p, Type: worker.Kill, Forget: true})
		case config.SET:
			klog.InfoS("Ignoring snapshot update in incremental mode", "source", u.Source)
		}
	}
}

func (a *Agent) dispatch(p *v1.Pod, t worker.UpdateType) {
	if p.DeletionTimestamp != nil {
		t = worker.Kill
	}
	if t != worker.Kill && !a.admitted(p, t == worker.Create) {
		return
	}
	a.workers.Update(worker.Work{Pod: p, MirrorPod: a.mirrorOf(p), Type: t, GracePeriod: p.DeletionGracePeriodSeconds})
}

func (a *Agent) mirrorOf(p *v1.Pod) *v1.Pod {
	if !pod.IsStatic(p) {
		return nil
	}
	m, _ := a.pods.MirrorPodOf(p)
	return m
}

func (a *Agent) markSeen(source string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.seen.Has(source) {
		klog.InfoS("Source ready", "source", source)
		a.seen.Insert(source)
	}
}

// SourceReady reports whether the loop has processed the source's first update.
func (a *Agent) SourceReady(source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen.Has(source)
}

// SourcesReady returns the sources not yet seen; none means all are ready.
func (a *Agent) SourcesReady() (missing []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	missing = sets.List(a.sources.Difference(a.seen))
	return missing
}

// Pods returns the node's pods with their latest statuses, sorted by full
// name, as deep copies the caller may keep.
func (a *Agent) Pods() []*v1.Pod {
	ps := a.pods.Pods()
	out := make([]*v1.Pod, 0, len(ps))
	for _, p := range ps {
		c := p.DeepCopy()
		if st, ok := a.statuses.Get(p.UID); ok {
			c.Status = st
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return pod.FullName(out[i]) < pod.FullName(out[j]) })
	return out
}

// PodsVersion changes whenever what Pods returns may have changed: it grows
// with every change to the pods or their statuses. Both counters only grow,
// so their sum changes exactly when either does.
func (a *Agent) PodsVersion() uint64 {
	return a.pods.Version() + a.statuses.Version()
}

// handleMirror indexes mirror pods (they are never run) and wakes the static
// pod's worker when its mirror was deleted or changed, so a mirror deleted by
// a user comes back within a sync, not at the next resync.
func (a *Agent) handleMirror(op config.Operation, mirror *v1.Pod) {
	switch op {
	case config.REMOVE:
		a.pods.RemovePod(mirror)
	case config.ADD, config.UPDATE, config.DELETE, config.RECONCILE:
		a.pods.AddOrUpdatePod(mirror)
	default:
		return
	}
	if op == config.RECONCILE {
		return
	}
	if static, ok := a.pods.StaticPodOf(mirror); ok && !a.rejected.Has(static.UID) {
		a.workers.Update(worker.Work{Pod: static, MirrorPod: a.mirrorOf(static), Type: worker.Sync})
	}
}

// forget runs when a pod's worker is gone for good.
func (a *Agent) forget(uid types.UID) {
	a.statuses.Delete(uid)
	a.observed.delete(uid)
	if a.prober != nil {
		a.prober.Remove(uid)
	}
	if a.cluster != nil {
		a.cluster.ForgetPod(uid)
	}
}
