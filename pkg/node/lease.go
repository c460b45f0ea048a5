package node

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/kube"
)

// DesiredLease is existing (nil: none yet) renewed at now: held by the node
// for durationSeconds, owned by the Node with nodeUID so that deleting the
// Node lets the garbage collector delete the Lease. An unknown nodeUID ("")
// keeps whatever owner the Lease had; a Node owner with another UID (the
// Node was deleted and created again) is replaced.
func DesiredLease(existing *coordinationv1.Lease, nodeName string, nodeUID types.UID, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if existing == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: LeaseNamespace}}
	} else {
		l = existing.DeepCopy()
	}
	l.Spec.HolderIdentity = ptrTo(nodeName)
	l.Spec.LeaseDurationSeconds = ptrTo(durationSeconds)
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if nodeUID == "" {
		return l
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}
	refs := []metav1.OwnerReference{owner}
	for _, r := range l.OwnerReferences {
		if r.APIVersion == "v1" && r.Kind == "Node" {
			continue
		}
		refs = append(refs, r)
	}
	l.OwnerReferences = refs
	return l
}

// LeasesGetter is where a LeaseController finds the Lease.
type LeasesGetter interface {
	Leases(namespace string) kube.LeaseClient
}

// LeaseController renews the node's Lease in kube-node-lease: the heartbeat
// the node lifecycle controller watches. One goroutine, run by Run; it never
// blocks anything else and retries failures with backoff.
type LeaseController struct {
	leases   LeasesGetter
	nodeName string
	duration int32
	renew    time.Duration
	timeout  time.Duration
	nodeUID  func() types.UID
	now      func() time.Time
	// kick asks for a renewal now (the Node's UID changed).
	kick chan struct{}

	// latest is the Lease as last read or written; nil means read it first.
	// Only Run's goroutine touches it.
	latest *coordinationv1.Lease
}

// NewLeaseController renews the Lease of cfg.NodeName every
// cfg.RenewInterval(). nodeUID returns the Node's UID for the owner
// reference ("" while unknown).
func NewLeaseController(leases LeasesGetter, cfg Config, nodeUID func() types.UID) (*LeaseController, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if nodeUID == nil {
		nodeUID = func() types.UID { return "" }
	}
	return &LeaseController{
		leases: leases, nodeName: cfg.NodeName, duration: cfg.LeaseDurationSeconds,
		renew: cfg.RenewInterval(), timeout: cfg.callTimeout(), nodeUID: nodeUID, now: time.Now,
		kick: make(chan struct{}, 1),
	}, nil
}

// Kick asks for a renewal now rather than at the next period: the Node was
// (re-)registered, and the Lease should name its new UID as owner without
// waiting up to a renew interval. It never blocks.
func (c *LeaseController) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run renews the Lease until ctx is done.
func (c *LeaseController) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("lease", klog.KRef(LeaseNamespace, c.nodeName))
	logger.Info("Starting node lease renewal", "every", c.renew, "duration", time.Duration(c.duration)*time.Second)
	b := newBackoff(c.renew)
	failing := false
	for {
		wait := wait.Jitter(c.renew, 0.04)
		if err := c.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait = b.next()
			logger.Error(err, "Failed to renew the node lease, will retry", "in", wait)
			failing = true
		} else {
			b.reset()
			if failing {
				logger.Info("Renewed the node lease again")
				failing = false
			}
		}
		select {
		case <-ctx.Done():
			logger.Info("Stopped node lease renewal")
			return nil
		case <-time.After(wait):
		case <-c.kick:
		}
	}
}

// sync renews the Lease once: read it if needed, create it if missing,
// update it otherwise. A conflict or a vanished Lease drops what was known,
// so the retry starts from a fresh read.
func (c *LeaseController) sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	leases := c.leases.Leases(LeaseNamespace)
	if c.latest == nil {
		l, err := leases.Get(ctx, c.nodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			created, err := leases.Create(ctx, DesiredLease(nil, c.nodeName, c.nodeUID(), c.duration, c.now()), metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create lease: %w", err)
			}
			c.latest = created
			return nil
		case err != nil:
			return fmt.Errorf("get lease: %w", err)
		}
		c.latest = l
	}
	updated, err := leases.Update(ctx, DesiredLease(c.latest, c.nodeName, c.nodeUID(), c.duration, c.now()), metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			c.latest = nil
		}
		return fmt.Errorf("update lease: %w", err)
	}
	c.latest = updated
	return nil
}

func ptrTo[T any](v T) *T { return &v }
