package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
	"github.com/nodelet/nodelet/pkg/pod"
)

func node(uid string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: types.UID(uid)}}
}

// newFake returns a clientset that gives created pods a UID, as the API
// server does.
func newFake(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*v1.Pod)
		p.UID = types.UID(fmt.Sprintf("mirror-%d", n.Add(1)))
		return false, nil, nil
	})
	return c
}

// writes lists the create and delete calls on pods.
func writes(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			out = append(out, "create")
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	return out
}

func getMirror(t *testing.T, c *fake.Clientset) *v1.Pod {
	t.Helper()
	m, err := c.CoreV1().Pods("default").Get(context.Background(), "web-node1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get mirror: %v", err)
	}
	return m
}

func TestSyncMirrorCreates(t *testing.T) {
	c := newFake(node("n-uid"))
	mc := NewClient(kubefake.Wrap(c), "node1", pod.NewManager())
	static := staticPod("s1", "h1")

	if err := mc.SyncMirror(context.Background(), static, nil); err != nil {
		t.Fatal(err)
	}
	m := getMirror(t, c)
	if m.Annotations[pod.ConfigMirrorAnnotationKey] != "h1" || m.OwnerReferences[0].UID != "n-uid" {
		t.Fatalf("mirror: %v %v", m.Annotations, m.OwnerReferences)
	}

	// A current mirror costs no API call.
	c.ClearActions()
	if err := mc.SyncMirror(context.Background(), static, m); err != nil {
		t.Fatal(err)
	}
	if len(c.Actions()) != 0 {
		t.Fatalf("actions for a current mirror: %v", c.Actions())
	}
}

func TestSyncMirrorReplaces(t *testing.T) {
	now := metav1.Now()
	old := mirrorPod("m-old", "h1")
	deleting := mirrorPod("m-old", "h1")
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name   string
		static *v1.Pod
		mirror *v1.Pod
	}{
		{"static changed", staticPod("s1", "h2"), old},
		{"mirror deleted by a user", staticPod("s1", "h1"), deleting},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newFake(node("n-uid"), tc.mirror.DeepCopy())
			mc := NewClient(kubefake.Wrap(c), "node1", pod.NewManager())
			if err := mc.SyncMirror(context.Background(), tc.static, tc.mirror); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(writes(c)); got != "[delete web-node1 create]" {
				t.Fatalf("writes = %s", got)
			}
			for _, a := range c.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok {
					o := d.GetDeleteOptions()
					if o.Preconditions == nil || *o.Preconditions.UID != "m-old" || *o.GracePeriodSeconds != 0 {
						t.Errorf("delete options %+v", o)
					}
				}
			}
			m := getMirror(t, c)
			if m.UID == "m-old" || m.Annotations[pod.ConfigMirrorAnnotationKey] != tc.static.Annotations[pod.ConfigHashAnnotationKey] {
				t.Fatalf("mirror not replaced: %s %v", m.UID, m.Annotations)
			}
		})
	}
}

// Without a Node there is no owner for the mirror: the sync fails, and the
// worker creates the mirror once the Node exists.
func TestSyncMirrorRetriesUntilNodeExists(t *testing.T) {
	c := newFake()
	pods := pod.NewManager()
	static := staticPod("s1", "h1")
	pods.AddOrUpdatePod(static)
	mc := NewClient(kubefake.Wrap(c), "node1", pods)
	err := mc.SyncMirror(context.Background(), static, nil)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want the Node's NotFound", err)
	}
	if mc.isUnreachable() {
		t.Fatal("an API answer counted as unreachable")
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), node("n-uid"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go mc.Run(ctx)
	poll.Eventually(t, "mirror created by the retry worker", func() bool {
		_, err := c.CoreV1().Pods("default").Get(ctx, "web-node1", metav1.GetOptions{})
		return err == nil
	})
}

// While the API server does not answer, the static pod's worker does not
// wait on it.
func TestSyncMirrorUnreachableQueues(t *testing.T) {
	c := newFake(node("n-uid"))
	var calls atomic.Int64
	c.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		return true, nil, errors.New("connection refused")
	})
	mc := NewClient(kubefake.Wrap(c), "node1", pod.NewManager())
	static := staticPod("s1", "h1")
	if err := mc.SyncMirror(context.Background(), static, nil); err == nil {
		t.Fatal("no error from an unreachable API server")
	}
	if !mc.isUnreachable() {
		t.Fatal("network error not noticed")
	}
	before := calls.Load()
	if err := mc.SyncMirror(context.Background(), static, nil); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if calls.Load() != before {
		t.Fatal("SyncMirror called the API while it is unreachable")
	}
	// Both left to the worker, with backoff.
	if n := mc.queue.NumRequeues(task{uid: "s1"}); n != 2 {
		t.Fatalf("retries queued %d, want 2", n)
	}
}

func TestDeleteMirrorOrphans(t *testing.T) {
	orphan := mirrorPod("m-orphan", "h1")
	orphan.Name = "gone-node1"
	kept := mirrorPod("m-kept", "h1")
	c := newFake(node("n-uid"), orphan.DeepCopy(), kept.DeepCopy())
	pods := pod.NewManager()
	pods.AddOrUpdatePod(staticPod("s1", "h1")) // kept's static pod came back
	pods.AddOrUpdatePod(orphan)
	pods.AddOrUpdatePod(kept)
	mc := NewClient(kubefake.Wrap(c), "node1", pods)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { mc.Run(ctx); close(done) }()

	_ = mc.DeleteMirror(ctx, kept)
	_ = mc.DeleteMirror(ctx, orphan)
	poll.Eventually(t, "orphan deleted", func() bool {
		_, err := c.CoreV1().Pods("default").Get(ctx, "gone-node1", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := c.CoreV1().Pods("default").Get(ctx, "web-node1", metav1.GetOptions{}); err != nil {
		t.Fatalf("mirror with a static pod was deleted: %v", err)
	}
	cancel()
	<-done
}
