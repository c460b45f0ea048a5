// Package objects watches the config maps and secrets that pods on the node
// reference, each on its own, for the two readers of them: volumes
// (configMap, secret and projected volumes, rewritten when an object
// changes) and container environments (podsync.ObjectSource). A watch
// has a field selector on the object's name, what the Node authorizer
// allows a node to list and watch; reads are served from a synced watch, so
// preparing a pod and refreshing its volumes cost no API call.
package objects

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/kube"
)

// Watcher keeps one watch per config map or secret that a pod on the node
// references, with a field selector on its name: the Node authorizer
// allows a node to list and watch exactly those objects, and nothing else
// of the namespace is sent. A watch stops when its last pod is gone.
//
// Reads are served from a watch's store once it has synced; before that
// (or without Run) they go to the API. Safe for concurrent use.
type Watcher struct {
	client kube.Interface
	// changed is called, from a watch's goroutine, when a watched object
	// appears, changes or goes away; initial marks what the watch's first
	// list found.
	changed Changed

	mu      sync.Mutex
	ctx     context.Context // set by Run; no watch starts before
	stopped bool            // Run is waiting for the watches: none starts
	running sync.WaitGroup  // the watches' goroutines
	watches map[Ref]*objWatch
	pods    map[types.UID][]Ref
}

// Changed is told that the object ref, which the pods users reference,
// appeared, changed or went away; initial marks what a watch's first list
// found. It is called from the watch's goroutine.
type Changed func(ref Ref, users []types.UID, initial bool)

type objWatch struct {
	users  sets.Set[types.UID]
	store  cache.Store
	synced func() bool
	cancel context.CancelFunc
}

// New returns a Watcher reading with client, which tells changed of every
// change of a watched object. Start its watches with Run.
func New(client kube.Interface, changed Changed) *Watcher {
	return &Watcher{client: client, changed: changed, watches: map[Ref]*objWatch{}, pods: map[types.UID][]Ref{}}
}

// Run lets watches start, beginning with those pods asked for already,
// and stops them all when ctx is done. It returns once every watch it
// started has stopped.
func (w *Watcher) Run(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	for ref, ow := range w.watches {
		w.start(ref, ow)
	}
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.running.Wait()
	return nil
}

// SetPod makes the watches match what pod uid references now.
func (w *Watcher) SetPod(uid types.UID, refs []Ref) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.pods[uid]
	w.pods[uid] = refs
	for _, r := range refs {
		ow := w.watches[r]
		if ow == nil {
			ow = &objWatch{users: sets.New[types.UID]()}
			w.watches[r] = ow
			w.start(r, ow)
		}
		ow.users.Insert(uid)
	}
	for _, r := range old {
		if !containsRef(refs, r) {
			w.release(uid, r)
		}
	}
}

// RemovePod drops pod uid's references, stopping watches no one needs.
func (w *Watcher) RemovePod(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.pods[uid] {
		w.release(uid, r)
	}
	delete(w.pods, uid)
}

// release drops one reference; the caller holds w.mu.
func (w *Watcher) release(uid types.UID, r Ref) {
	ow := w.watches[r]
	if ow == nil {
		return
	}
	ow.users.Delete(uid)
	if ow.users.Len() == 0 {
		if ow.cancel != nil {
			ow.cancel()
		}
		delete(w.watches, r)
	}
}

// cached returns the watched object of ref. known is false when no synced
// watch can say (the caller reads the API instead); obj is nil when the
// object does not exist.
func (w *Watcher) cached(r Ref) (obj runtime.Object, known bool) {
	w.mu.Lock()
	var store cache.Store
	var synced func() bool
	if ow := w.watches[r]; ow != nil {
		store, synced = ow.store, ow.synced
	}
	w.mu.Unlock()
	if store == nil || !synced() {
		return nil, false
	}
	o, exists, err := store.GetByKey(r.Namespace + "/" + r.Name)
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	return o.(runtime.Object), true
}

// start runs the watch of r; the caller holds w.mu.
func (w *Watcher) start(r Ref, ow *objWatch) {
	if w.ctx == nil || w.stopped || ow.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	ow.cancel = cancel
	selector := fields.OneTermEqualSelector("metadata.name", r.Name).String()
	var lw *cache.ListWatch
	var objType runtime.Object
	switch r.Kind {
	case ConfigMap:
		lw, objType = nameListWatch(w.client.ConfigMaps(r.Namespace), selector), &v1.ConfigMap{}
	default:
		lw, objType = nameListWatch(w.client.Secrets(r.Namespace), selector), &v1.Secret{}
	}
	notify := func(initial bool) {
		w.mu.Lock()
		cur := w.watches[r]
		var users []types.UID
		if cur == ow {
			users = ow.users.UnsortedList()
		}
		w.mu.Unlock()
		if len(users) > 0 {
			w.changed(r, users, initial)
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, w.client),
		ObjectType:    objType,
		Handler: cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(_ any, initial bool) { notify(initial) },
			UpdateFunc: func(_, _ any) { notify(false) },
			DeleteFunc: func(any) { notify(false) },
		},
	})
	ow.store, ow.synced = store, ctrl.HasSynced
	klog.V(4).InfoS("Watching object for pods", "kind", r.Kind, "namespace", r.Namespace, "name", r.Name)
	w.running.Go(func() { ctrl.RunWithContext(ctx) })
}

func containsRef(refs []Ref, r Ref) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// nameListWatch lists and watches the objects of c that selector picks.
func nameListWatch[T, L runtime.Object](c kube.ResourceClient[T, L], selector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return c.Watch(ctx, o)
		},
	}
}

// hasPod reports whether pod uid's references are watched.
func (w *Watcher) hasPod(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.pods[uid]
	return ok
}

// Watches returns how many objects are watched.
func (w *Watcher) Watches() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// ReadConfigMap returns a config map from its watch when that has synced
// (no API call), else from the API.
func (w *Watcher) ReadConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	if o, known := w.cached(Ref{ConfigMap, ns, name}); known {
		if o == nil {
			return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
		}
		return o.(*v1.ConfigMap), nil
	}
	return w.client.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// ReadSecret returns a secret as ReadConfigMap returns a config map.
func (w *Watcher) ReadSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	if o, known := w.cached(Ref{Secret, ns, name}); known {
		if o == nil {
			return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
		}
		return o.(*v1.Secret), nil
	}
	return w.client.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// envReadTimeout bounds a read of an object for an env var: container
// creation waits for it.
const envReadTimeout = 10 * time.Second

// ConfigMap reads a config map pod's environment refers to (it implements
// podsync.ObjectSource). The pod's references are watched from now on, so a
// change is reported: a pod waiting for the object can start as soon as it
// exists.
func (w *Watcher) ConfigMap(ctx context.Context, pod *v1.Pod, name string) (*v1.ConfigMap, error) {
	w.watchRefs(pod)
	ctx, cancel := context.WithTimeout(ctx, envReadTimeout)
	defer cancel()
	return w.ReadConfigMap(ctx, pod.Namespace, name)
}

// Secret reads a secret pod's environment refers to, as ConfigMap.
func (w *Watcher) Secret(ctx context.Context, pod *v1.Pod, name string) (*v1.Secret, error) {
	w.watchRefs(pod)
	ctx, cancel := context.WithTimeout(ctx, envReadTimeout)
	defer cancel()
	return w.ReadSecret(ctx, pod.Namespace, name)
}

// watchRefs starts the watches of what pod references, once.
func (w *Watcher) watchRefs(pod *v1.Pod) {
	if !w.hasPod(pod.UID) {
		w.SetPod(pod.UID, PodRefs(pod))
	}
}
