// Package apistatus writes the node's pod statuses to the API server (the
// status subresource): an API pod's to itself, a static pod's to its mirror
// pod. It writes only what changed, as soon as it changed, never an older
// status over a newer one, retries what failed with backoff (an API server
// that is down is caught up with when it is back), and compares the API's
// view with its own every ReconcilePeriod to repair what someone else
// changed. When an API pod being deleted has stopped, it writes the final
// status and then removes the object (grace period 0): that is how a
// deleted pod's object goes away.
package apistatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/mirror"
	"github.com/nodelet/nodelet/pkg/pod"
)

// Options tune a Manager.
type Options struct {
	// ReconcilePeriod is how often every pod's status is compared with the
	// API's view of it (default 10 s).
	ReconcilePeriod time.Duration
	// Workers is how many pods are written at once (default 4).
	Workers int
	// RetryBase and RetryMax bound the backoff of a failed write (defaults
	// 200 ms and 5 s: an API server back from an outage is caught up with
	// within RetryMax; one cheap request per pod every 5 s is no load).
	RetryBase, RetryMax time.Duration
}

// Manager syncs pod statuses to the API server. Its methods never block on
// the network: they store and queue, and Run's workers write.
type Manager struct {
	client kube.Interface
	pods   *pod.Manager
	opts   Options
	queue  workqueue.TypedRateLimitingInterface[types.UID]

	mu      sync.Mutex
	entries map[types.UID]*entry
}

// entry is what is known of one pod, keyed by its UID (the static pod's for
// a static pod).
type entry struct {
	pod     *v1.Pod
	status  v1.PodStatus
	version uint64 // bumped by every status that differs from the last
	// killed: the pod has stopped for good; once the status is written an
	// API pod being deleted is removed from the API.
	killed, deleted bool
	// reconcile: compare with the API's view on the next pass, not only with
	// what was written.
	reconcile bool
	written   *written
}

// written is the last status successfully written (or found already there).
type written struct {
	version uint64
	target  types.UID // the API object: the pod, or a static pod's mirror
	status  v1.PodStatus
}

// NewManager returns a Manager writing through client; pods is the node's
// pod manager, whose API pods and mirror pods (with their API status, from
// the watch) are the targets.
func NewManager(client kube.Interface, pods *pod.Manager, opts Options) *Manager {
	if opts.ReconcilePeriod <= 0 {
		opts.ReconcilePeriod = 10 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = 200 * time.Millisecond
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 5 * time.Second
	}
	return &Manager{
		client: client,
		pods:   pods,
		opts:   opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](opts.RetryBase, opts.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "pod-status"}),
		entries: map[types.UID]*entry{},
	}
}

// SetPodStatus stores the pod's latest status and queues it for writing.
// Queuing is coalescing: a pod queued twice is written once, with the
// newest status.
func (m *Manager) SetPodStatus(p *v1.Pod, status v1.PodStatus) {
	m.set(p, status, false)
}

// PodKilled stores the final status of a pod that has stopped; once written,
// an API pod being deleted is removed from the API with grace period 0.
func (m *Manager) PodKilled(p *v1.Pod, status v1.PodStatus) {
	m.set(p, status, true)
}

func (m *Manager) set(p *v1.Pod, status v1.PodStatus, killed bool) {
	m.mu.Lock()
	e := m.entries[p.UID]
	if e == nil {
		e = &entry{}
		m.entries[p.UID] = e
	}
	if e.version == 0 || !equality.Semantic.DeepEqual(e.status, status) {
		e.status = *status.DeepCopy()
		e.version++
	}
	e.pod = p
	if killed {
		e.killed = true
	}
	m.mu.Unlock()
	// Always queued, even unchanged: the target may have changed (a mirror
	// re-created), which the worker notices for nothing more than a lookup.
	m.queue.Add(p.UID)
}

// ForgetPod drops a pod that left the node.
func (m *Manager) ForgetPod(uid types.UID) {
	m.mu.Lock()
	delete(m.entries, uid)
	m.mu.Unlock()
	m.queue.Forget(uid)
}

// Run writes until ctx is done.
func (m *Manager) Run(ctx context.Context) error {
	var wg wait.Group
	wg.Start(func() { <-ctx.Done(); m.queue.ShutDown() })
	for i := 0; i < m.opts.Workers; i++ {
		wg.Start(func() {
			for m.processNext(ctx) {
			}
		})
	}
	wg.StartWithContext(ctx, m.reconcileLoop)
	wg.Wait()
	return nil
}

// reconcileLoop queues every pod for a comparison with the API's view every
// ReconcilePeriod, the first time one period after the start.
func (m *Manager) reconcileLoop(ctx context.Context) {
	_ = wait.PollUntilContextCancel(ctx, m.opts.ReconcilePeriod, false, func(context.Context) (bool, error) {
		m.reconcileAll()
		return false, nil
	})
}

// reconcileAll queues every pod for a comparison with the API's view.
func (m *Manager) reconcileAll() {
	m.mu.Lock()
	uids := make([]types.UID, 0, len(m.entries))
	for uid, e := range m.entries {
		e.reconcile = true
		uids = append(uids, uid)
	}
	m.mu.Unlock()
	for _, uid := range uids {
		m.queue.Add(uid)
	}
}

func (m *Manager) processNext(ctx context.Context) bool {
	uid, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(uid)
	err := m.sync(ctx, uid)
	if err == nil {
		m.queue.Forget(uid)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	if m.queue.NumRequeues(uid) < 3 {
		klog.ErrorS(err, "Pod status sync failed; retrying", "podUID", uid)
	} else {
		// An API server that is away fails every pod every few seconds.
		klog.V(4).InfoS("Pod status sync failed again", "podUID", uid, "err", err)
	}
	m.queue.AddRateLimited(uid)
	return true
}

// snapshot copies an entry for one pass, taking its reconcile request.
func (m *Manager) snapshot(uid types.UID) (entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[uid]
	if e == nil {
		return entry{}, false
	}
	s := *e
	e.reconcile = false
	return s, true
}

// record stores the outcome of a pass, unless the pod was forgotten meanwhile.
func (m *Manager) record(uid types.UID, w *written, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[uid]
	if e == nil {
		return
	}
	// Only ever forward: a slower pass never overwrites a newer record.
	if w != nil && (e.written == nil || e.written.target != w.target || w.version >= e.written.version) {
		e.written = w
	}
	if deleted {
		e.deleted = true
	}
}

// target returns the API object a pod's status goes to, as the watch last
// showed it: the API pod itself, or the static pod's current mirror. false
// when there is none (yet): a static pod without a mirror, a pod gone.
func (m *Manager) target(p *v1.Pod) (*v1.Pod, bool) {
	if pod.IsStatic(p) {
		mp, ok := m.pods.MirrorPodOf(p)
		// A mirror being replaced is about to go; the new one wakes the
		// static pod's worker, which sets its status again.
		if !ok || mp.DeletionTimestamp != nil || !mirror.IsMirrorOf(mp, p) {
			return nil, false
		}
		return mp, true
	}
	return m.pods.PodByUID(p.UID)
}

// sync is one pass over one pod.
func (m *Manager) sync(ctx context.Context, uid types.UID) error {
	e, ok := m.snapshot(uid)
	if !ok {
		return nil
	}
	t, ok := m.target(e.pod)
	if !ok {
		return nil
	}
	w := e.written
	sameTarget := w != nil && w.target == t.UID
	pendingDelete := e.killed && !e.deleted && deletable(e.pod)
	if sameTarget && w.version == e.version && !e.reconcile && !pendingDelete {
		return nil
	}

	// What the API has: what this node wrote last (the server's answer,
	// newer than the watch may be yet), unless asked to look at the watch's
	// view to catch changes made by others.
	base := t.Status
	if sameTarget && !e.reconcile {
		base = w.status
	}
	result := &written{version: e.version, target: t.UID, status: base}
	merged, ok := Merge(base, e.status)
	if !ok {
		klog.V(2).InfoS("Not writing a non-terminal status over a terminal one", "pod", klog.KObj(t), "apiPhase", base.Phase, "phase", e.status.Phase)
	} else {
		patch, err := Patch(t.UID, base, merged)
		if err != nil {
			return err
		}
		if patch != nil {
			updated, err := m.client.Pods(t.Namespace).Patch(ctx, t.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			switch {
			case apierrors.IsNotFound(err):
				klog.V(3).InfoS("Pod gone from the API; status not written", "pod", klog.KObj(t), "uid", t.UID)
				return nil
			case replaced(err):
				// The name is another pod's now (a re-created mirror, a pod
				// deleted and created again). The watch brings the new one,
				// and the sync that follows sets its status again.
				klog.V(3).InfoS("Pod replaced in the API; status not written", "pod", klog.KObj(t), "uid", t.UID)
				return nil
			case err != nil:
				return fmt.Errorf("write status of pod %s: %w", klog.KObj(t), err)
			}
			klog.V(3).InfoS("Wrote pod status", "pod", klog.KObj(t), "uid", t.UID, "phase", updated.Status.Phase, "version", e.version, "patch", string(patch))
			result.status = updated.Status
		}
	}
	deleted := false
	if pendingDelete {
		if err := m.deletePod(ctx, t); err != nil {
			m.record(uid, result, false)
			return err
		}
		deleted = true
	}
	m.record(uid, result, deleted)
	return nil
}

// replaced reports whether a status patch was refused because the pod of
// that name has another UID than the patch names: the API server answers 422
// "metadata.uid: field is immutable" (or 409 for a precondition).
func replaced(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// deletable: a pod whose object this node removes once it has stopped - an
// API pod someone deleted. Static pods and mirrors are never deleted this
// way.
func deletable(p *v1.Pod) bool {
	return p.DeletionTimestamp != nil && !pod.IsStatic(p) && !pod.IsMirror(p)
}

// deletePod removes the stopped pod's object, only if the name is still
// that pod's.
func (m *Manager) deletePod(ctx context.Context, p *v1.Pod) error {
	grace := int64(0)
	err := m.client.Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      metav1.NewUIDPreconditions(string(p.UID)),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete stopped pod %s: %w", klog.KObj(p), err)
	}
	klog.V(2).InfoS("Removed stopped pod from the API", "pod", klog.KObj(p), "uid", p.UID)
	return nil
}
