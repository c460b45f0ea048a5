package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/pod"
)

const (
	// callTimeout bounds an API call made on a static pod's worker: the
	// static pod's own sync waits for it, and must not wait long.
	callTimeout = 3 * time.Second
	// unreachableFor is how long after a network-level failure SyncMirror
	// leaves API calls to the background worker instead of making the
	// static pod's worker wait for them.
	unreachableFor = 10 * time.Second
	retryBaseDelay = 200 * time.Millisecond
	retryMaxDelay  = 5 * time.Second
)

// Client creates, replaces and deletes the mirror pods of one node.
//
// SyncMirror runs on the static pod's worker and calls the API directly, so
// that a new static pod's mirror exists as soon as it starts. What fails is
// retried by Client's own worker with backoff (Run): a Node not registered
// yet, an API server that is down.
// While the API server does not answer, SyncMirror does not call it at all
// and leaves the work to that worker, so static pods start and restart
// without waiting on the network. DeleteMirror only queues.
//
// The worker and SyncMirror may act on the same static pod at once; every
// delete carries the mirror's UID as a precondition and a create that finds
// a pod already there leaves it alone (the informer reports it and the static
// pod's next sync judges it), so concurrent attempts converge.
type Client struct {
	client   kube.Interface
	nodeName string
	pods     *pod.Manager
	now      func() time.Time

	queue workqueue.TypedRateLimitingInterface[task]

	mu          sync.Mutex
	nodeUID     types.UID             // cached; "" until read
	orphans     map[types.UID]*v1.Pod // mirror UID -> mirror to delete
	unreachable time.Time             // until then, API calls are left to the worker
}

// task is one piece of queued work: sync the mirror of the static pod uid,
// or delete the orphaned mirror uid.
type task struct {
	uid    types.UID
	orphan bool
}

// NewClient returns a Client for the node's mirror pods. pods is the node's
// pod manager, where the worker looks up the current static pods and mirrors.
func NewClient(client kube.Interface, nodeName string, pods *pod.Manager) *Client {
	return &Client{
		client:   client,
		nodeName: nodeName,
		pods:     pods,
		now:      time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[task](retryBaseDelay, retryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[task]{Name: "mirror-pods"}),
		orphans: map[types.UID]*v1.Pod{},
	}
}

// Run runs the retry and orphan deletion worker until ctx is done.
func (c *Client) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); <-ctx.Done(); c.queue.ShutDown() }()
	defer wg.Wait()
	for c.processNext(ctx) {
	}
	return nil
}

// SyncMirror makes static's mirror current; mirror is the one the pod manager
// knows, or nil. Errors are also queued for a retry.
func (c *Client) SyncMirror(ctx context.Context, static, mirror *v1.Pod) error {
	act := Decide(static, mirror)
	if act == None {
		return nil
	}
	t := task{uid: static.UID}
	if c.isUnreachable() {
		c.queue.AddRateLimited(t)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := c.apply(ctx, static, mirror, act); err != nil {
		c.queue.AddRateLimited(t)
		return err
	}
	c.queue.Forget(t)
	return nil
}

// DeleteMirror queues the deletion of a mirror whose static pod is gone. The
// worker checks again, just before deleting, that no static pod has come
// (back) for it.
func (c *Client) DeleteMirror(_ context.Context, mirror *v1.Pod) error {
	c.mu.Lock()
	c.orphans[mirror.UID] = mirror
	c.mu.Unlock()
	c.queue.Add(task{uid: mirror.UID, orphan: true})
	return nil
}

// Forget drops the retry state of a static pod that left the node.
func (c *Client) Forget(static types.UID) {
	c.queue.Forget(task{uid: static})
}

func (c *Client) processNext(ctx context.Context) bool {
	t, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(t)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var err error
	if t.orphan {
		err = c.deleteOrphan(cctx, t.uid)
	} else {
		err = c.retry(cctx, t.uid)
	}
	if err == nil {
		c.queue.Forget(t)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	// The first failure was logged where it happened (or by the static pod's
	// worker); repeats while the API server is away are only noise.
	if c.queue.NumRequeues(t) < 3 {
		klog.ErrorS(err, "Mirror pod work failed; retrying", "uid", t.uid, "orphan", t.orphan)
	} else {
		klog.V(4).InfoS("Mirror pod work failed again", "uid", t.uid, "orphan", t.orphan, "err", err)
	}
	c.queue.AddRateLimited(t)
	return true
}

// retry syncs a static pod's mirror from the pod manager's current view.
func (c *Client) retry(ctx context.Context, uid types.UID) error {
	static, ok := c.pods.PodByUID(uid)
	if !ok || !pod.IsStatic(static) {
		return nil // gone from the node: nothing to mirror
	}
	mirror, _ := c.pods.MirrorPodOf(static)
	act := Decide(static, mirror)
	if act == None {
		return nil
	}
	return c.apply(ctx, static, mirror, act)
}

func (c *Client) apply(ctx context.Context, static, mirror *v1.Pod, act Action) error {
	if act == Replace {
		if err := c.deletePod(ctx, mirror); err != nil {
			return fmt.Errorf("delete outdated mirror pod %s: %w", klog.KObj(mirror), err)
		}
		klog.V(2).InfoS("Deleted outdated mirror pod", "pod", klog.KObj(mirror), "uid", mirror.UID, "deleting", mirror.DeletionTimestamp != nil)
	}
	nodeUID, err := c.nodeUIDOf(ctx)
	if err != nil {
		return err
	}
	m := Build(static, c.nodeName, nodeUID)
	created, err := c.client.Pods(m.Namespace).Create(ctx, m, metav1.CreateOptions{})
	c.noteCall(err)
	switch {
	case apierrors.IsAlreadyExists(err):
		// One we have not heard of yet, or a pod of that name that is not a
		// mirror: the watch reports it, and the next sync judges it.
		klog.V(3).InfoS("Mirror pod already exists", "pod", klog.KObj(m))
		return nil
	case apierrors.IsForbidden(err):
		// NodeRestriction checks the owner reference against the Node: a
		// re-registered Node has a new UID.
		c.forgetNodeUID()
		return fmt.Errorf("create mirror pod %s: %w", klog.KObj(m), err)
	case err != nil:
		return fmt.Errorf("create mirror pod %s: %w", klog.KObj(m), err)
	}
	klog.V(2).InfoS("Created mirror pod", "pod", klog.KObj(created), "uid", created.UID, "staticUID", static.UID)
	return nil
}

// deleteOrphan deletes a queued orphan unless a static pod now stands for it.
func (c *Client) deleteOrphan(ctx context.Context, uid types.UID) error {
	c.mu.Lock()
	m := c.orphans[uid]
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	done := func() {
		c.mu.Lock()
		delete(c.orphans, uid)
		c.mu.Unlock()
	}
	if _, ok := c.pods.StaticPodOf(m); ok {
		done() // the static pod's sync replaces it if it must
		return nil
	}
	if err := c.deletePod(ctx, m); err != nil {
		return fmt.Errorf("delete orphaned mirror pod %s: %w", klog.KObj(m), err)
	}
	done()
	klog.InfoS("Deleted mirror pod whose static pod is gone", "pod", klog.KObj(m), "uid", uid)
	return nil
}

// deletePod deletes p at once (a mirror runs nothing to wait for), only if
// the pod of that name is still p.
func (c *Client) deletePod(ctx context.Context, p *v1.Pod) error {
	grace := int64(0)
	err := c.client.Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      metav1.NewUIDPreconditions(string(p.UID)),
	})
	c.noteCall(err)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or the name is another pod's now
	}
	return err
}

// nodeUIDOf returns the Node's UID, read once: the mirror's owner reference
// needs it.
func (c *Client) nodeUIDOf(ctx context.Context) (types.UID, error) {
	c.mu.Lock()
	uid := c.nodeUID
	c.mu.Unlock()
	if uid != "" {
		return uid, nil
	}
	node, err := c.client.Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
	c.noteCall(err)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("node %s is not registered yet; mirror pods need it as owner: %w", c.nodeName, err)
	}
	if err != nil {
		return "", fmt.Errorf("get node %s: %w", c.nodeName, err)
	}
	c.mu.Lock()
	c.nodeUID = node.UID
	c.mu.Unlock()
	return node.UID, nil
}

func (c *Client) forgetNodeUID() {
	c.mu.Lock()
	c.nodeUID = ""
	c.mu.Unlock()
}

// noteCall tracks whether the API server answers at all: any answer, even an
// error status, means it does.
func (c *Client) noteCall(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && isNetworkError(err) {
		c.unreachable = c.now().Add(unreachableFor)
		return
	}
	c.unreachable = time.Time{}
}

func (c *Client) isUnreachable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Before(c.unreachable)
}

// isNetworkError: the request got no answer from the API server (refused,
// timed out), as opposed to an API status such as NotFound or Forbidden.
func isNetworkError(err error) bool {
	var status apierrors.APIStatus
	return !errors.As(err, &status)
}
