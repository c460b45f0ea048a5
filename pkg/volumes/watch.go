package volumes

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
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

// objectWatcher keeps one watch per config map or secret that a pod on the
// node references, with a field selector on its name: the Node authorizer
// allows a node to list and watch exactly those objects, and nothing else
// of the namespace is sent. A watch stops when its last pod is gone.
//
// Reads are served from a watch's store once it has synced, so preparing
// and refreshing volumes costs no API call; before that (or without Run)
// callers read the API directly.
type objectWatcher struct {
	client kube.Interface
	// changed is called, from a watch's goroutine, when a watched object
	// appears, changes or goes away; initial marks what the watch's first
	// list found.
	changed func(ref volumeRef, users []types.UID, initial bool)

	mu      sync.Mutex
	ctx     context.Context // set by run; no watch starts before
	watches map[volumeRef]*objWatch
	pods    map[types.UID][]volumeRef
}

type objWatch struct {
	users  sets.Set[types.UID]
	store  cache.Store
	synced func() bool
	cancel context.CancelFunc
}

func newObjectWatcher(client kube.Interface, changed func(volumeRef, []types.UID, bool)) *objectWatcher {
	return &objectWatcher{client: client, changed: changed, watches: map[volumeRef]*objWatch{}, pods: map[types.UID][]volumeRef{}}
}

// run lets watches start, beginning with those pods asked for already, and
// stops them all when ctx is done.
func (w *objectWatcher) run(ctx context.Context) {
	w.mu.Lock()
	w.ctx = ctx
	for ref, ow := range w.watches {
		w.start(ref, ow)
	}
	w.mu.Unlock()
	<-ctx.Done()
}

// setPod makes the watches match what pod uid references now.
func (w *objectWatcher) setPod(uid types.UID, refs []volumeRef) {
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

// removePod drops pod uid's references, stopping watches no one needs.
func (w *objectWatcher) removePod(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.pods[uid] {
		w.release(uid, r)
	}
	delete(w.pods, uid)
}

// release drops one reference; the caller holds w.mu.
func (w *objectWatcher) release(uid types.UID, r volumeRef) {
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

// get returns the watched object of ref. known is false when no synced
// watch can say (the caller reads the API instead); obj is nil when the
// object does not exist.
func (w *objectWatcher) get(r volumeRef) (obj runtime.Object, known bool) {
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
	o, exists, err := store.GetByKey(r.namespace + "/" + r.name)
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	return o.(runtime.Object), true
}

// start runs the watch of r; the caller holds w.mu.
func (w *objectWatcher) start(r volumeRef, ow *objWatch) {
	if w.ctx == nil || ow.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	ow.cancel = cancel
	selector := fields.OneTermEqualSelector("metadata.name", r.name).String()
	var lw *cache.ListWatch
	var objType runtime.Object
	switch r.kind {
	case kindConfigMap:
		lw, objType = nameListWatch(w.client.ConfigMaps(r.namespace), selector), &v1.ConfigMap{}
	default:
		lw, objType = nameListWatch(w.client.Secrets(r.namespace), selector), &v1.Secret{}
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
	klog.V(4).InfoS("Watching object for pod volumes", "kind", r.kind, "namespace", r.namespace, "name", r.name)
	go ctrl.RunWithContext(ctx)
}

func containsRef(refs []volumeRef, r volumeRef) bool {
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
func (w *objectWatcher) hasPod(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.pods[uid]
	return ok
}
