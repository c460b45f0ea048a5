package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
)

func TestDesiredLease(t *testing.T) {
	nodeOwner := func(uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n1", UID: uid}
	}
	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "t-uid"}
	tests := []struct {
		name      string
		existing  *coordinationv1.Lease
		uid       types.UID
		wantOwner []metav1.OwnerReference
	}{
		{"new, node unknown", nil, "", nil},
		{"new, node known", nil, "u1", []metav1.OwnerReference{nodeOwner("u1")}},
		{"node unknown keeps the owner", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: LeaseNamespace, OwnerReferences: []metav1.OwnerReference{nodeOwner("u1")}}}, "", []metav1.OwnerReference{nodeOwner("u1")}},
		{"re-created node replaces the owner, others stay", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: LeaseNamespace, OwnerReferences: []metav1.OwnerReference{other, nodeOwner("old")}}}, "u2", []metav1.OwnerReference{nodeOwner("u2"), other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := DesiredLease(tt.existing, "n1", tt.uid, 40, t0)
			if l.Name != "n1" || l.Namespace != LeaseNamespace {
				t.Errorf("lease %s/%s", l.Namespace, l.Name)
			}
			if *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(t0) {
				t.Errorf("spec %+v", l.Spec)
			}
			if len(l.OwnerReferences) != len(tt.wantOwner) {
				t.Fatalf("owners %v, want %v", l.OwnerReferences, tt.wantOwner)
			}
			for i := range tt.wantOwner {
				if l.OwnerReferences[i] != tt.wantOwner[i] {
					t.Errorf("owners %v, want %v", l.OwnerReferences, tt.wantOwner)
				}
			}
			if tt.existing != nil && tt.existing.Spec.RenewTime != nil {
				t.Errorf("input modified")
			}
		})
	}
}

func newTestLease(t *testing.T, client *fake.Clientset, uid types.UID) (*LeaseController, *time.Time) {
	t.Helper()
	lc, err := NewLeaseController(kubefake.Wrap(client), testConfig(), func() types.UID { return uid })
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	lc.now = func() time.Time { return now }
	return lc, &now
}

func getLease(t *testing.T, client *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLeaseSyncCreatesThenRenews(t *testing.T) {
	client := fake.NewClientset()
	lc, now := newTestLease(t, client, "u1")
	ctx := context.Background()
	if err := lc.sync(ctx); err != nil {
		t.Fatal(err)
	}
	l := getLease(t, client)
	if !l.Spec.RenewTime.Time.Equal(t0) || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "u1" {
		t.Fatalf("created lease %+v", l)
	}
	*now = t0.Add(10 * time.Second)
	if err := lc.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l := getLease(t, client); !l.Spec.RenewTime.Time.Equal(*now) {
		t.Fatalf("renew time %v, want %v", l.Spec.RenewTime, *now)
	}
	if n := countActions(client, "create", "leases"); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
}

func TestLeaseSyncRecoversFromConflictAndDeletion(t *testing.T) {
	client := fake.NewClientset()
	lc, now := newTestLease(t, client, "u1")
	ctx := context.Background()
	if err := lc.sync(ctx); err != nil {
		t.Fatal(err)
	}

	// Someone else wrote the Lease: the update conflicts once, the retry
	// reads it again and renews.
	conflicts := 1
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "n1", errors.New("changed"))
		}
		return false, nil, nil
	})
	*now = t0.Add(10 * time.Second)
	if err := lc.sync(ctx); err == nil {
		t.Fatal("conflict not reported")
	}
	if err := lc.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l := getLease(t, client); !l.Spec.RenewTime.Time.Equal(*now) {
		t.Fatalf("renew time %v after conflict, want %v", l.Spec.RenewTime, *now)
	}

	// Someone deleted the Lease: it is created again.
	if err := client.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	*now = t0.Add(20 * time.Second)
	_ = lc.sync(ctx) // NotFound on update
	if err := lc.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l := getLease(t, client); !l.Spec.RenewTime.Time.Equal(*now) {
		t.Fatalf("renew time %v after deletion, want %v", l.Spec.RenewTime, *now)
	}
}

// TestLeaseRunRetriesAnOutage: while the API server fails, Run keeps trying
// with backoff (not at the renew period) and renews as soon as it answers.
func TestLeaseRunRetriesAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		var failures atomic.Int32
		failures.Store(3)
		client.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			if failures.Add(-1) >= 0 {
				return true, nil, apierrors.NewServiceUnavailable("down")
			}
			return false, nil, nil
		})
		cfg := testConfig()
		lc, err := NewLeaseController(kubefake.Wrap(client), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { lc.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		start := time.Now()
		poll.Eventually(t, "lease created after the outage", func() bool {
			_, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), LeaseNamespace, "n1")
			return err == nil
		})
		// 3 retries: 0.1 + 0.2 + 0.4 s and jitter, far below the renew period.
		if d := time.Since(start); d >= time.Second {
			t.Errorf("lease created %s after the start", d)
		}
	})
}

func countActions(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}
