package volumes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/objects"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// PodLookup finds the current version of a pod on the node; *pod.Manager
// implements it.
type PodLookup interface {
	PodByUID(uid types.UID) (*v1.Pod, bool)
}

// Options configure a Provider.
type Options struct {
	// Client reads config maps and secrets and requests tokens, with the
	// node's credentials. Required.
	Client kube.Interface
	// RootDir is nodelet's root directory; volumes live under
	// RootDir/pods/<uid>/volumes. Required.
	RootDir string
	// Pods, when set, gives the refresher the current version of each pod
	// (labels and annotations for the downward API), and a pod it no
	// longer knows is forgotten. Without it pods are kept until Cleanup.
	Pods PodLookup
	// ResyncPeriod is how often the volumes of running pods are
	// re-rendered: tokens renewed when due, config maps and secrets
	// re-read. Default one minute, well inside the 10 minutes a token
	// lives at least.
	ResyncPeriod time.Duration
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// NodeAllocatable is what a downward API resourceFieldRef to a limit
	// the container does not set reads, as in its environment.
	NodeAllocatable v1.ResourceList
	// Wake, when set, is called when a config map or secret a pod
	// references appears or changes, after the pod's volumes were
	// rewritten: a pod waiting for it (FailedMount, an env var from it)
	// can start now rather than at its next retry.
	Wake func(uid types.UID)
	// Claims, when set, reads persistent volume claims, their volumes and
	// the node: persistentVolumeClaim volumes are supported (local and
	// hostPath PVs).
	Claims ClaimReader
}

// DefaultResyncPeriod is the default Options.ResyncPeriod.
const DefaultResyncPeriod = time.Minute

// refreshTimeout bounds one pod's refresh, so one slow pod does not hold
// back the others for long.
const refreshTimeout = 30 * time.Second

// Provider makes projected volumes and keeps them current. It implements
// podsync.VolumeProvider. Safe for concurrent use.
type Provider struct {
	client  kube.Interface
	rootDir string
	pods    PodLookup
	resync  time.Duration
	clock   clock.WithTicker
	tokens  *TokenManager
	wake    func(types.UID)
	alloc   v1.ResourceList
	watcher *objects.Watcher
	claims  ClaimReader
	// changed holds pods whose referenced objects changed, for Run's
	// refreshers.
	changed workqueue.TypedInterface[types.UID]
	// mountTmpfs makes a volume directory a tmpfs mount; tests replace it.
	mountTmpfs func(dir string, fsGroup *int64) error

	mu      sync.Mutex
	tracked map[types.UID]*podVolumes
}

// podVolumes is a pod whose volumes the refresher keeps current. Its mutex
// serialises writes of the pod's volumes (Prepare from the pod worker, the
// refresher, Cleanup).
type podVolumes struct {
	mu   sync.Mutex
	pod  *v1.Pod
	gone bool
	// ready: the volumes are written and the last refresh worked. Until
	// then Prepare (re)writes them itself, so a container does not start
	// on content that failed to refresh.
	ready bool
	// lastErr is the last refresh failure, logged once rather than at
	// every period.
	lastErr string
}

// NewProvider returns a Provider. Start its refresher with Run.
func NewProvider(opts Options) (*Provider, error) {
	if opts.Client == nil {
		return nil, errors.New("volumes: no API client")
	}
	if opts.RootDir == "" {
		return nil, errors.New("volumes: no root directory")
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = DefaultResyncPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	p := &Provider{
		client:     opts.Client,
		rootDir:    opts.RootDir,
		pods:       opts.Pods,
		resync:     opts.ResyncPeriod,
		clock:      opts.Clock,
		tokens:     NewTokenManager(opts.Client, opts.Clock),
		wake:       opts.Wake,
		alloc:      opts.NodeAllocatable,
		claims:     opts.Claims,
		changed:    workqueue.NewTyped[types.UID](),
		mountTmpfs: mountVolumeTmpfs,
		tracked:    map[types.UID]*podVolumes{},
	}
	p.watcher = objects.New(opts.Client, func(ref objects.Ref, users []types.UID, initial bool) {
		klog.V(3).InfoS("Referenced object changed", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name, "pods", len(users), "initial", initial)
		for _, uid := range users {
			// What a watch's first list finds, the pods that started it
			// read themselves, unless that read failed: an object created
			// between their read and the list is news only to them.
			if !initial || !p.isReady(uid) {
				p.changed.Add(uid)
			}
		}
	})
	return p, nil
}

// Claims is what reads persistent volume claims, or nil.
func (p *Provider) Claims() ClaimReader { return p.claims }

// Check fails, wrapping criconfig.ErrUnsupported, for a volume the Provider
// cannot make: a type other than projected, or a projection source it does
// not know. It does no I/O.
func (p *Provider) Check(pod *v1.Pod, v *v1.Volume) error {
	return checkVolume(pod, v)
}

// Prepare writes the pod's projected volumes and has the refresher keep
// them current from now on. For a pod whose volumes are written and whose
// last refresh worked it does no I/O, so it may be called at every sync;
// unless the pod changed what its downward API files show (a label or an
// annotation was changed on the running pod): then they are rewritten at
// once, as every pod update reaches here through its worker's sync.
func (p *Provider) Prepare(ctx context.Context, pod *v1.Pod) error {
	if !hasAPIVolumes(pod) {
		return nil
	}
	t := p.track(pod.UID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pod == nil || t.pod.Generation != pod.Generation || t.pod.ResourceVersion != pod.ResourceVersion {
		p.watcher.SetPod(pod.UID, objects.PodRefs(pod))
	}
	stale := t.pod != nil && downwardChanged(t.pod, pod)
	t.pod = pod
	if t.ready && !stale {
		return nil
	}
	if stale {
		klog.V(3).InfoS("Pod metadata changed, rewriting its downward API files", "pod", klog.KObj(pod))
	}
	err := p.write(ctx, pod)
	t.ready = err == nil
	return err
}

// Cleanup forgets a pod: its volumes are no longer refreshed, and no
// refresh of them is running once Cleanup returns, so the caller may
// delete the directories. Its tokens are dropped.
func (p *Provider) Cleanup(uid types.UID) {
	p.forget(uid)
	p.tokens.Forget(uid)
}

// forget stops refreshing a pod's volumes and watching what it references.
func (p *Provider) forget(uid types.UID) {
	p.watcher.RemovePod(uid)
	p.mu.Lock()
	t := p.tracked[uid]
	delete(p.tracked, uid)
	p.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		t.gone = true
		t.mu.Unlock()
	}
}

// Objects is the watcher of the config maps and secrets the pods
// reference, which also serves the reads of container environments
// (podsync.ObjectSource): a change of an object an env var reads wakes the
// pod too. Run runs it.
func (p *Provider) Objects() *objects.Watcher { return p.watcher }

// Run watches the config maps and secrets the tracked pods reference,
// rewrites a pod's volumes as soon as one changes, and refreshes all of
// them every resync period (tokens), until ctx is done. It returns once
// the watches and the refreshers have stopped.
func (p *Provider) Run(ctx context.Context) error {
	klog.V(2).InfoS("Starting projected volume refresher", "period", p.resync)
	var workers sync.WaitGroup
	workers.Go(func() { _ = p.watcher.Run(ctx) })
	for range changeWorkers {
		workers.Go(func() { p.refreshChanged(ctx) })
	}
	tick := p.clock.NewTicker(p.resync)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C():
			p.RefreshAll(ctx)
		}
	}
	p.changed.ShutDown()
	workers.Wait()
	return nil
}

// RefreshAll re-renders the volumes of every tracked pod once. Failures
// are logged; the previous content stays, so a pod keeps a token that is
// still valid through an API server outage.
func (p *Provider) RefreshAll(ctx context.Context) {
	p.mu.Lock()
	pods := make(map[types.UID]*podVolumes, len(p.tracked))
	for uid, t := range p.tracked {
		pods[uid] = t
	}
	p.mu.Unlock()
	for uid, t := range pods {
		if ctx.Err() != nil {
			return
		}
		var current *v1.Pod
		if p.pods != nil {
			pod, ok := p.pods.PodByUID(uid)
			if !ok {
				klog.V(3).InfoS("Pod left the node, no longer refreshing its volumes", "podUID", uid)
				p.forget(uid)
				continue
			}
			current = pod
		}
		p.refresh(ctx, t, current)
	}
}

func (p *Provider) refresh(ctx context.Context, t *podVolumes, current *v1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone {
		return
	}
	if current != nil {
		t.pod = current
	}
	pod := t.pod
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		// Nothing runs that could read them.
		return
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	err := p.write(ctx, pod)
	t.ready = err == nil
	switch {
	case err != nil && err.Error() != t.lastErr:
		klog.ErrorS(err, "Could not refresh projected volumes, keeping their current content", "pod", klog.KObj(pod))
	case err == nil && t.lastErr != "":
		klog.InfoS("Projected volumes refreshed again", "pod", klog.KObj(pod))
	}
	t.lastErr = ""
	if err != nil {
		t.lastErr = err.Error()
	}
}

// isReady reports whether a pod's volumes are written and current.
func (p *Provider) isReady(uid types.UID) bool {
	p.mu.Lock()
	t := p.tracked[uid]
	p.mu.Unlock()
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready
}

// track returns the tracking entry of a pod, creating it.
func (p *Provider) track(uid types.UID) *podVolumes {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.tracked[uid]
	if t == nil {
		t = &podVolumes{}
		p.tracked[uid] = t
	}
	return t
}

// write renders and writes every projected volume of pod; the caller holds
// the pod's lock. The first failure stops it: the pod cannot start anyway.
func (p *Provider) write(ctx context.Context, pod *v1.Pod) error {
	var fsGroup *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup = sc.FSGroup
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		src, ok := asProjection(v)
		if !ok {
			continue
		}
		dir, _ := criconfig.APIVolumePath(p.rootDir, pod.UID, v)
		files, err := projectedFiles(ctx, p, pod, src)
		changed := false
		if err == nil {
			err = p.mountTmpfs(dir, fsGroup)
		}
		if err == nil {
			changed, err = AtomicWrite(dir, files, fsGroup)
		}
		if err != nil {
			// Upstream's wording, which people search for.
			return fmt.Errorf("MountVolume.SetUp failed for volume %q: %w", v.Name, err)
		}
		if changed {
			klog.V(3).InfoS("Wrote projected volume", "pod", klog.KObj(pod), "volume", v.Name, "files", len(files))
		}
	}
	return nil
}

func hasAPIVolumes(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if _, ok := asProjection(&pod.Spec.Volumes[i]); ok {
			return true
		}
	}
	return false
}

// The projector the Provider renders with: the API server, as the node.

func (p *Provider) configMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	return p.watcher.ReadConfigMap(ctx, ns, name)
}

func (p *Provider) secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return p.watcher.ReadSecret(ctx, ns, name)
}

func (p *Provider) allocatable() v1.ResourceList { return p.alloc }

func (p *Provider) token(ctx context.Context, pod *v1.Pod, t *v1.ServiceAccountTokenProjection) (string, error) {
	return p.tokens.Token(ctx, pod, t)
}
