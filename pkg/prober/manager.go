package prober

import (
	"context"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/metrics"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/version"
)

// Options configure a Manager.
type Options struct {
	// Exec runs exec probes (cri.Client).
	Exec Execer
	// Recorder receives Unhealthy and ProbeWarning events; nil: none.
	Recorder record.EventRecorder
	// OnChange is called, from a probe's goroutine, when what the View of
	// a pod says changed: a container turned ready or not, started, or
	// failed its liveness or startup probe. It must not block: it is meant
	// to wake the pod's worker.
	OnChange func(uid types.UID)
	// Reported returns the container statuses the API last showed for pod
	// (a static pod's are its mirror's); nil: none known. A container
	// already running when the manager started resumes the readiness
	// reported there (see resumed). nil func: nothing is resumed.
	Reported func(pod *v1.Pod) []v1.ContainerStatus
	// KubeVersion is the "<major>.<minor>" of the User-Agent of HTTP and
	// gRPC probes (kube-probe/1.37), which servers may match on; empty:
	// the Kubernetes release nodelet implements (pkg/version).
	KubeVersion string
}

// Manager owns the probe workers of every pod on the node. Workers start
// as pods are observed; Run stops them all.
type Manager struct {
	// ctx is the parent of every worker's context; stop ends it.
	ctx      context.Context
	stop     context.CancelFunc
	opts     Options
	handlers handlers
	// begun is when the manager started: containers already running then
	// were adopted from an earlier nodelet.
	begun time.Time
	wg    sync.WaitGroup

	mu      sync.Mutex
	pods    map[types.UID]*podProbes // guarded by mu
	stopped bool                     // guarded by mu: no worker starts any more
}

// podProbes is what the manager keeps of one pod.
type podProbes struct {
	pod        *v1.Pod
	containers map[string]*instance
	labels     map[string]metrics.ProbeLabels // every probe series ever used, for cleanup
}

// instance is one probed container instance.
type instance struct {
	spec    *v1.Container
	state   Container
	workers map[Kind]*worker
}

// New returns a Manager; its workers run until Run returns.
func New(opts Options) *Manager {
	if opts.KubeVersion == "" {
		opts.KubeVersion = version.MajorMinor()
	}
	ua := "kube-probe/" + opts.KubeVersion
	// The workers' context is the manager's own, not Run's: pods are
	// observed by the agent's workers, which may start before Run does.
	ctx, stop := context.WithCancel(context.Background())
	return &Manager{
		ctx: ctx, stop: stop, opts: opts, begun: time.Now(),
		handlers: handlers{exec: opts.Exec, userAgent: ua},
		pods:     map[types.UID]*podProbes{},
	}
}

// Run returns once ctx has ended and every probe worker has stopped; no
// worker starts after that.
func (m *Manager) Run(ctx context.Context) error {
	<-ctx.Done()
	m.mu.Lock()
	m.stopped = true
	m.stop()
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// Observe tells the manager what runs of pod: it starts probing every
// running container instance with probes that it does not probe yet, and
// stops probing instances that no longer run. podIP is the address HTTP,
// TCP and gRPC probes go to by default (the host's for a host-network pod).
// A pod being deleted keeps only its readiness probes.
func (m *Manager) Observe(pod *v1.Pod, rs *runtime.PodStatus, podIP string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	pp := m.pods[pod.UID]
	want := targets(pod, rs)
	if len(want) == 0 && pp == nil {
		return
	}
	if pp == nil {
		pp = &podProbes{containers: map[string]*instance{}, labels: map[string]metrics.ProbeLabels{}}
		m.pods[pod.UID] = pp
	}
	pp.pod = pod
	for name, inst := range pp.containers {
		if t, ok := want[name]; !ok || t.id != inst.state.ID {
			inst.stop()
			delete(pp.containers, name)
		}
	}
	terminating := pod.DeletionTimestamp != nil
	for name, t := range want {
		if t.id == "" {
			continue
		}
		inst, ok := pp.containers[name]
		if !ok {
			st, kinds := m.initial(pod, t)
			inst = &instance{spec: t.spec, state: st, workers: map[Kind]*worker{}}
			pp.containers[name] = inst
			m.startWorkers(pp, inst, kinds, t.startedAt, podIP)
		}
		if terminating {
			for k, w := range inst.workers {
				if stopsWhenTerminating(k) {
					w.cancel()
					delete(inst.workers, k)
				}
			}
		}
	}
}

// initial is the state of a newly observed container instance and the
// probes to start: resumed from what the API reported when the instance was
// already running before the manager started, else initial.
func (m *Manager) initial(pod *v1.Pod, t target) (Container, []Kind) {
	if m.opts.Reported != nil && t.startedAt.Before(m.begun) {
		if st, kinds, ok := resumed(t.spec, t.id, m.opts.Reported(pod)); ok {
			klog.V(2).InfoS("Probe state resumed from the API status", "pod", klog.KObj(pod), "container", t.spec.Name,
				"started", st.Started, "ready", st.Ready)
			return st, kinds
		}
	}
	return initial(t.spec, t.id)
}

// startWorkers starts the probes kinds of inst. Called with m.mu held.
func (m *Manager) startWorkers(pp *podProbes, inst *instance, kinds []Kind, startedAt time.Time, podIP string) {
	pod := pp.pod
	for _, k := range kinds {
		if pod.DeletionTimestamp != nil && stopsWhenTerminating(k) {
			continue
		}
		spec := k.spec(inst.spec)
		labels := metrics.ProbeLabels{ProbeType: k.String(), Container: inst.spec.Name, Pod: pod.Name, Namespace: pod.Namespace, PodUID: string(pod.UID)}
		pp.labels[k.String()+"/"+inst.spec.Name] = labels
		w := &worker{
			m: m, kind: k, pod: pod, spec: spec, cfg: settingsOf(spec), startedAt: startedAt,
			target: probeTarget{container: inst.spec, containerID: inst.state.ID, podIP: podIP},
			spread: startedAt.Before(m.begun), series: metrics.NewProbeSeries(labels),
		}
		w.ctx, w.cancel = context.WithCancel(m.ctx)
		inst.workers[k] = w
		m.wg.Go(w.run)
	}
}

func (inst *instance) stop() {
	for _, w := range inst.workers {
		w.cancel()
	}
}

// record folds a result that stands into the state of w's instance and
// reports whether w keeps probing.
func (m *Manager) record(w *worker, r Result) bool {
	m.mu.Lock()
	pp := m.pods[w.pod.UID]
	var inst *instance
	if pp != nil {
		inst = pp.containers[w.target.container.Name]
	}
	if inst == nil || inst.state.ID != w.target.containerID || inst.workers[w.kind] != w {
		m.mu.Unlock()
		return false // stopped meanwhile
	}
	next, start, keep := apply(inst.state, inst.spec, w.kind, r)
	changed := !sameState(inst.state, next)
	inst.state = next
	if !keep {
		delete(inst.workers, w.kind)
	}
	m.startWorkers(pp, inst, start, w.startedAt, w.target.podIP)
	m.mu.Unlock()
	if changed {
		klog.V(2).InfoS("Probe result changed container state", "probeType", w.kind, "pod", klog.KObj(w.pod),
			"container", inst.spec.Name, "started", next.Started, "ready", next.Ready, "failed", next.Failed != nil)
		if m.opts.OnChange != nil {
			m.opts.OnChange(w.pod.UID)
		}
	}
	return keep
}

// View returns what the probes found of the pod's containers.
func (m *Manager) View(uid types.UID) View {
	m.mu.Lock()
	defer m.mu.Unlock()
	pp := m.pods[uid]
	if pp == nil || len(pp.containers) == 0 {
		return nil
	}
	v := make(View, len(pp.containers))
	for name, inst := range pp.containers {
		v[name] = inst.state
	}
	return v
}

// Remove stops probing a pod that left the node and forgets its results
// and metric series.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	pp := m.pods[uid]
	delete(m.pods, uid)
	m.mu.Unlock()
	if pp == nil {
		return
	}
	for _, inst := range pp.containers {
		inst.stop()
	}
	for l := range maps.Values(pp.labels) {
		metrics.ForgetProbe(l)
	}
}

func (m *Manager) event(pod *v1.Pod, eventType, reason, msg string) {
	if m.opts.Recorder != nil {
		m.opts.Recorder.Event(pod, eventType, reason, msg)
	}
}
