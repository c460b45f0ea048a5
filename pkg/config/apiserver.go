package config

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/kube"
)

// APISource feeds the merger with the pods the API server has bound to this
// node (spec.nodeName), mirror pods included: the sync loop indexes those and
// re-creates a mirror as soon as its deletion is seen.
//
// An informer keeps the node's pods; its notifications only name a pod
// (namespace/name) in a work queue, and the queue's worker sends what the
// informer's store holds for that name when it gets to it. So a burst of
// changes to one pod is one update, and an update never carries a version
// older than one already sent: the store is always at least as new as the
// notification. The merger is told:
//
//   - once the initial list has synced, a SET of every pod (even none), so
//     the source becomes ready only when the node's pods are really known:
//     a pod bound while nodelet was down starts then, and housekeeping
//     never kills an API pod it has not heard of yet;
//   - then UPDATE for a pod that is new or changed (the merger classifies it
//     as ADD, UPDATE, DELETE or RECONCILE), REMOVE for a pod gone from the
//     store, and REMOVE + UPDATE when a name now belongs to a new UID.
//
// An API server that is down at start or later only delays this source;
// static pods are not affected. While it cannot be reached, list and watch
// are retried every apiRetryPeriod (untilAnswered) rather than with the
// reflector's backoff, which grows to 30-60 s: the node catches up within a
// second or two of the API server's return.
type APISource struct {
	nodeName string
	informer cache.SharedIndexInformer
	queue    workqueue.TypedInterface[string]
	out      chan<- PodUpdate

	// sent is what the merger has been told per pod key. Owned by Run.
	sent map[string]sentPod
}

// sentPod is the version of a pod last sent to the merger.
type sentPod struct {
	uid             types.UID
	resourceVersion string
}

// NewAPISource builds the source of the pods bound to nodeName. Nothing is
// listed before Run.
func NewAPISource(client kube.Interface, nodeName string, out chan<- PodUpdate) *APISource {
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	pods := client.Pods(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return untilAnswered(ctx, "list", func() (runtime.Object, error) { return pods.List(ctx, o) })
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return untilAnswered(ctx, "watch", func() (watch.Interface, error) { return pods.Watch(ctx, o) })
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Pod{},
		cache.SharedIndexInformerOptions{ObjectDescription: "pods of node " + nodeName})
	// Managed fields are never looked at here and are a large part of each
	// object; the merger copies every pod it keeps.
	_ = inf.SetTransform(dropManagedFields)
	s := &APISource{
		nodeName: nodeName,
		informer: inf,
		queue:    workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "api-pods"}),
		out:      out,
		sent:     map[string]sentPod{},
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.enqueue,
		UpdateFunc: func(_, obj any) { s.enqueue(obj) },
		DeleteFunc: s.enqueue,
	})
	return s
}

// apiRetryPeriod is how often a list or watch is retried while the API
// server does not answer. One cheap request a second is nothing to an API
// server that is back. A variable for tests.
var apiRetryPeriod = time.Second

// untilAnswered calls f until the API server gives an answer that is not
// "unavailable" (any success, or an error such as Forbidden or Gone that the
// reflector must see), or ctx ends.
func untilAnswered[T any](ctx context.Context, what string, f func() (T, error)) (T, error) {
	var since, logged time.Time
	for {
		v, err := f()
		if err == nil || !unavailable(err) || ctx.Err() != nil {
			if err == nil && !since.IsZero() {
				klog.InfoS("API server answers again", "call", what, "after", time.Since(since).Round(time.Millisecond))
			}
			return v, err
		}
		now := time.Now()
		if since.IsZero() {
			since = now
		}
		if now.Sub(logged) >= 30*time.Second {
			logged = now
			klog.InfoS("API server unavailable; retrying", "call", what, "every", apiRetryPeriod, "for", now.Sub(since).Round(time.Second), "err", err)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(apiRetryPeriod):
		}
	}
}

// unavailable reports whether err means the API server could not answer the
// request now: no answer at all (refused, reset, timed out), or a status
// saying it is overloaded, starting or failing (429, 5xx).
func unavailable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTooManyRequests(err) || status.Status().Code >= 500
}

func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func (s *APISource) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		klog.ErrorS(err, "Key of an API pod")
		return
	}
	s.queue.Add(key)
}

// Run lists and watches until ctx is done.
func (s *APISource) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.informer.RunWithContext(ctx) }()
	go func() { defer wg.Done(); <-ctx.Done(); s.queue.ShutDown() }()
	defer wg.Wait()

	klog.InfoS("Waiting for the API server's pods of this node", "node", s.nodeName)
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return nil
	}
	if !s.sendInitial(ctx) {
		return nil
	}
	for s.processNext(ctx) {
	}
	return nil
}

// sendInitial sends the whole store as a SET. Notifications of the initial
// list are still queued; processing them finds nothing new.
func (s *APISource) sendInitial(ctx context.Context) bool {
	var pods []*v1.Pod
	for _, obj := range s.informer.GetStore().List() {
		p, ok := obj.(*v1.Pod)
		if !ok || p.Spec.NodeName != s.nodeName {
			continue
		}
		pods = append(pods, p)
		s.sent[cache.MetaObjectToName(p).String()] = sentPod{uid: p.UID, resourceVersion: p.ResourceVersion}
	}
	sortPods(pods)
	klog.InfoS("API server pods listed", "node", s.nodeName, "pods", len(pods))
	return s.send(ctx, PodUpdate{Op: SET, Pods: pods})
}

func (s *APISource) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	ok := true
	for _, u := range s.updatesFor(key) {
		if ok = s.send(ctx, u); !ok {
			break
		}
	}
	return ok
}

// updatesFor compares the store's pod under key with what the merger was
// told, records the new state, and returns the updates that tell it.
func (s *APISource) updatesFor(key string) []PodUpdate {
	var cur *v1.Pod
	obj, exists, err := s.informer.GetStore().GetByKey(key)
	if err != nil {
		// The store is in memory: this does not happen.
		klog.ErrorS(err, "Read API pod from the informer store", "key", key)
		return nil
	}
	if exists {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName == s.nodeName {
			cur = p
		}
	}
	prev, known := s.sent[key]
	out, next := podChanges(key, prev, known, cur)
	if next == nil {
		delete(s.sent, key)
	} else {
		s.sent[key] = *next
	}
	return out
}

// podChanges decides what to send for one pod key: prev is what was last
// sent (known: anything was), cur what the API has now (nil: none). It
// returns the updates and the state to remember (nil: forget the key). Pure.
func podChanges(key string, prev sentPod, known bool, cur *v1.Pod) ([]PodUpdate, *sentPod) {
	var out []PodUpdate
	if known && (cur == nil || cur.UID != prev.uid) {
		out = append(out, PodUpdate{Op: REMOVE, Pods: []*v1.Pod{removedPod(key, prev.uid)}})
	}
	if cur == nil {
		return out, nil
	}
	if known && cur.UID == prev.uid && cur.ResourceVersion == prev.resourceVersion {
		return nil, &prev
	}
	out = append(out, PodUpdate{Op: UPDATE, Pods: []*v1.Pod{cur}})
	return out, &sentPod{uid: cur.UID, resourceVersion: cur.ResourceVersion}
}

// removedPod names a pod that left the API; the merger forgets pods by UID
// and hands out its own last copy.
func removedPod(key string, uid types.UID) *v1.Pod {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		name = key
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
}

func (s *APISource) send(ctx context.Context, u PodUpdate) bool {
	select {
	case s.out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}
