package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/kube"
)

// Until the node is first reported Ready, the status is recomputed every
// fastPeriod rather than every StatusUpdateFrequency, so a node whose
// runtime comes up a moment after nodelet goes Ready within a second, not
// ten. After fastWindow a node that is still not Ready is left to the
// normal period (its problem is not a start-up race).
const (
	fastPeriod = 200 * time.Millisecond
	fastWindow = 2 * time.Minute
	// factsTimeout bounds gathering the facts (runtime calls) per pass.
	factsTimeout = 10 * time.Second
)

// Clients are the API clients of a Controller.
type Clients struct {
	// Client watches the Node.
	Client kube.Interface
	// Heartbeat registers the Node, patches its status and renews the
	// Lease; nil means Client. Upstream gives it no client-side rate limit,
	// so that a burst of pod traffic never delays the node's heartbeat.
	Heartbeat kube.Interface
}

// Controller registers the Node, keeps its status current and, through its
// LeaseController, its Lease renewed. It watches its own Node (a field
// selector on the name, which the Node authorizer allows) so that a deleted
// Node is registered again at once.
type Controller struct {
	cfg      Config
	client   kube.Interface // watch
	hb       kube.Interface // writes
	facts    FactSource
	recorder record.EventRecorder
	ref      *v1.ObjectReference
	lease    *LeaseController
	now      func() time.Time

	// poke asks the status loop for a pass now (the Node was deleted).
	poke chan struct{}

	mu sync.Mutex
	// node is the Node as last seen (our own writes and the watch); nil
	// when not registered or deleted.
	node *v1.Node

	// Owned by the status loop. registered is the UID of the Node this
	// process registered or adopted: a Node the watch shows with another UID
	// (someone re-created it) is adopted again, labels restored.
	registered    types.UID
	lastReport    time.Time
	readyReported bool
}

// NewController checks cfg and builds a Controller. recorder may be nil (no
// events). Events go on the Node reference with UID = node name, the
// convention kubectl describe node looks events up by.
func NewController(cfg Config, clients Clients, facts FactSource, recorder record.EventRecorder) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if clients.Client == nil || facts == nil {
		return nil, errors.New("node: a client and a fact source are required")
	}
	if clients.Heartbeat == nil {
		clients.Heartbeat = clients.Client
	}
	c := &Controller{
		cfg: cfg, client: clients.Client, hb: clients.Heartbeat, facts: facts, recorder: recorder,
		ref:  &v1.ObjectReference{Kind: "Node", Name: cfg.NodeName, UID: types.UID(cfg.NodeName)},
		now:  time.Now,
		poke: make(chan struct{}, 1),
	}
	c.lease, err = NewLeaseController(clients.Heartbeat, cfg, c.nodeUID)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Node returns a copy of the Node as last seen, or nil before registration
// and while the Node is deleted.
func (c *Controller) Node() *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node.DeepCopy()
}

func (c *Controller) nodeUID() types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return ""
	}
	return c.node.UID
}

func (c *Controller) current() *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node
}

// setNode records n as the Node and, when its UID is new, has the Lease
// renewed at once so that its owner reference follows.
func (c *Controller) setNode(n *v1.Node) {
	c.mu.Lock()
	changed := n != nil && (c.node == nil || c.node.UID != n.UID)
	c.node = n
	c.mu.Unlock()
	if changed {
		c.lease.Kick()
	}
}

// forget drops the Node if it is still the one with uid, so the next pass
// registers again.
func (c *Controller) forget(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil || c.node.UID != uid {
		return false
	}
	c.node = nil
	return true
}

// Run registers the Node and keeps it and its Lease current until ctx is
// done. It owns its goroutines (the watch, the lease renewal) and returns
// only when they stopped.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", c.cfg.NodeName)
	ctx = klog.NewContext(ctx, logger)
	c.event(v1.EventTypeNormal, EventStarting, "Starting nodelet.")

	inf := c.nodeInformer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.observe,
		UpdateFunc: func(_, obj any) { c.observe(obj) },
		DeleteFunc: func(obj any) { c.observeDelete(ctx, obj) },
	}); err != nil {
		logger.Error(err, "Cannot watch the Node; a deleted Node comes back only when a status patch fails")
	}
	var wg wait.Group
	defer wg.Wait()
	wg.StartWithContext(ctx, inf.RunWithContext)
	wg.StartWithContext(ctx, func(ctx context.Context) { _ = c.lease.Run(ctx) })
	c.statusLoop(ctx)
	return nil
}

// nodeInformer watches this node's Node only: a field selector on the
// name, which the Node authorizer allows.
func (c *Controller) nodeInformer() cache.SharedIndexInformer {
	nodes := c.client.Nodes()
	selector := fields.OneTermEqualSelector("metadata.name", c.cfg.NodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return nodes.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c.client), &v1.Node{},
		cache.SharedIndexInformerOptions{ObjectDescription: "node " + c.cfg.NodeName})
}

// observe records the Node the watch saw, so the next status pass patches
// from what the API server has (another agent may have changed it).
func (c *Controller) observe(obj any) {
	if n, ok := obj.(*v1.Node); ok && n.Name == c.cfg.NodeName {
		c.setNode(n)
	}
}

func (c *Controller) observeDelete(ctx context.Context, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, ok := obj.(*v1.Node)
	if !ok || n.Name != c.cfg.NodeName || !c.forget(n.UID) {
		return
	}
	klog.FromContext(ctx).Info("Node was deleted, registering it again", "uid", n.UID)
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// statusLoop runs a pass every StatusUpdateFrequency (faster at start,
// slower with backoff while the API server fails) and at once when poked.
func (c *Controller) statusLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Starting node status updates", "every", c.cfg.StatusUpdateFrequency, "reportEvery", c.cfg.StatusReportFrequency)
	start := c.now()
	b := newBackoff(c.cfg.StatusUpdateFrequency)
	failing := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			logger.Info("Stopped node status updates")
			return
		case <-timer.C:
		case <-c.poke:
		}
		next := wait.Jitter(c.cfg.StatusUpdateFrequency, 0.04)
		if err := c.syncOnce(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			next = b.next()
			logger.Error(err, "Node status update failed, will retry", "in", next)
			failing = true
		} else {
			b.reset()
			if failing {
				logger.Info("Node status updates work again")
				failing = false
			}
			if !c.readyReported && c.now().Sub(start) < fastWindow {
				next = fastPeriod
			}
		}
		timer.Reset(next)
	}
}

// syncOnce gathers the facts, registers the Node if it is missing and
// patches its status when NeedsStatusPatch says so.
func (c *Controller) syncOnce(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, factsTimeout)
	facts := c.facts.Facts(fctx)
	cancel()

	n := c.current()
	if n == nil || n.UID != c.registered {
		var err error
		if n, err = c.register(ctx, facts); err != nil {
			return err
		}
	}
	now := c.now()
	desired := DesiredStatus(c.cfg, facts, n.Status, now)
	if !NeedsStatusPatch(n.Status, desired, c.lastReport, now, c.cfg.StatusReportFrequency) {
		return nil
	}
	patch, err := statusPatch(n, desired)
	if err != nil {
		return err
	}
	if emptyPatch(patch) {
		c.lastReport = now
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.callTimeout())
	defer cancel()
	patched, err := c.hb.Nodes().Patch(cctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(n.UID)
		}
		return fmt.Errorf("patch node status: %w", err)
	}
	c.lastReport = now
	c.setNode(patched)
	c.reported(ctx, n.Status.Conditions, patched.Status)
	return nil
}

// reported announces the condition changes the API server accepted.
func (c *Controller) reported(ctx context.Context, old []v1.NodeCondition, st v1.NodeStatus) {
	for _, e := range ConditionEvents(c.cfg.NodeName, old, st.Conditions) {
		c.event(e.Type, e.Reason, e.Message)
	}
	ready := IsReady(st)
	if ready && !c.readyReported {
		klog.FromContext(ctx).Info("Node is Ready")
	}
	c.readyReported = c.readyReported || ready
}

// register creates the Node, or adopts the one already there (restoring
// its default labels), or, with RegisterNode off, only reads it.
func (c *Controller) register(ctx context.Context, facts Facts) (*v1.Node, error) {
	logger := klog.FromContext(ctx)
	nodes := c.hb.Nodes()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.callTimeout())
	defer cancel()
	if !c.cfg.RegisterNode {
		n, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get node (--register-node=false: nodelet does not create it): %w", err)
		}
		c.registered = n.UID
		c.setNode(n)
		return n, nil
	}
	created, err := nodes.Create(ctx, InitialNode(c.cfg, facts, c.now()), metav1.CreateOptions{})
	if err == nil {
		logger.Info("Registered node", "uid", created.UID)
		c.event(v1.EventTypeNormal, EventRegisteredNode, fmt.Sprintf("Registered Node %s", c.cfg.NodeName))
		c.registered = created.UID
		c.setNode(created)
		c.reported(ctx, nil, created.Status)
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("register node: %w", err)
	}
	existing, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get the already registered node: %w", err)
	}
	if fixed, changed := ReconcileExisting(existing, c.cfg); changed {
		patch, err := twoWayPatch(existing, fixed)
		if err != nil {
			return nil, err
		}
		if existing, err = nodes.Patch(ctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("restore the default labels of the already registered node: %w", err)
		}
	}
	logger.Info("Node was already registered", "uid", existing.UID)
	c.registered = existing.UID
	c.setNode(existing)
	return existing, nil
}

func (c *Controller) event(eventType, reason, message string) {
	if c.recorder != nil {
		c.recorder.Event(c.ref, eventType, reason, message)
	}
}
