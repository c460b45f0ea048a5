package config

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/pkg/kube/kubefake"
	"github.com/nodelet/nodelet/pkg/pod"
)

func apiPod(name, uid, rv, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid), ResourceVersion: rv},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox:1.35"}}},
	}
}

func TestPodChanges(t *testing.T) {
	a1 := apiPod("a", "u1", "10", "n")
	a1b := apiPod("a", "u1", "11", "n")
	a2 := apiPod("a", "u2", "12", "n")
	prev := sentPod{uid: "u1", resourceVersion: "10"}
	tests := []struct {
		name    string
		known   bool
		cur     *v1.Pod
		ops     []Operation
		uids    []types.UID
		forget  bool
		nextRV  string
		nextUID types.UID
	}{
		{name: "new pod", cur: a1, ops: []Operation{UPDATE}, uids: []types.UID{"u1"}, nextRV: "10", nextUID: "u1"},
		{name: "same version", known: true, cur: a1, nextRV: "10", nextUID: "u1"},
		{name: "new version", known: true, cur: a1b, ops: []Operation{UPDATE}, uids: []types.UID{"u1"}, nextRV: "11", nextUID: "u1"},
		{name: "gone", known: true, ops: []Operation{REMOVE}, uids: []types.UID{"u1"}, forget: true},
		{name: "gone, never sent", forget: true},
		{name: "name reused by a new pod", known: true, cur: a2, ops: []Operation{REMOVE, UPDATE}, uids: []types.UID{"u1", "u2"}, nextRV: "12", nextUID: "u2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, next := podChanges("default/a", prev, tc.known, tc.cur)
			if len(out) != len(tc.ops) {
				t.Fatalf("got %d updates, want %v: %+v", len(out), tc.ops, out)
			}
			for i, u := range out {
				if u.Op != tc.ops[i] || len(u.Pods) != 1 || u.Pods[0].UID != tc.uids[i] {
					t.Errorf("update %d: %s %v, want %s %s", i, u.Op, u.Pods, tc.ops[i], tc.uids[i])
				}
				if u.Op == REMOVE && (u.Pods[0].Name != "a" || u.Pods[0].Namespace != "default") {
					t.Errorf("REMOVE names %s/%s", u.Pods[0].Namespace, u.Pods[0].Name)
				}
			}
			if tc.forget != (next == nil) {
				t.Fatalf("next = %+v, forget %v", next, tc.forget)
			}
			if next != nil && (next.resourceVersion != tc.nextRV || next.uid != tc.nextUID) {
				t.Errorf("next = %+v", next)
			}
		})
	}
}

func recvUpdate(t *testing.T, ch <-chan PodUpdate) PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no update from the API source")
		return PodUpdate{}
	}
}

func TestAPISourceInitialSetThenIncrements(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(apiPod("a", "u1", "1", "n"), apiPod("b", "u2", "1", "n"))
		ch := make(chan PodUpdate, 10)
		src := NewAPISource(kubefake.Wrap(client), "n", ch)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { src.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()

		u := recvUpdate(t, ch)
		if u.Op != SET || len(u.Pods) != 2 || u.Pods[0].Name != "a" || u.Pods[1].Name != "b" {
			t.Fatalf("first update = %s %v, want SET of a and b", u.Op, u.Pods)
		}
		// The notifications of the initial list bring nothing new.
		expectNoneNow(t, ch)

		pods := client.CoreV1().Pods("default")
		c := apiPod("c", "u3", "1", "n")
		if _, err := pods.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if u := recvUpdate(t, ch); u.Op != UPDATE || u.Pods[0].UID != "u3" {
			t.Fatalf("after create: %s %v", u.Op, u.Pods)
		}

		a := apiPod("a", "u1", "2", "n")
		a.Annotations = map[string]string{"x": "y"}
		if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if u := recvUpdate(t, ch); u.Op != UPDATE || u.Pods[0].Annotations["x"] != "y" {
			t.Fatalf("after update: %s %v", u.Op, u.Pods)
		}

		if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if u := recvUpdate(t, ch); u.Op != REMOVE || u.Pods[0].UID != "u2" {
			t.Fatalf("after delete: %s %v", u.Op, u.Pods)
		}
	})
}

func TestAPISourceEmptyNodeIsReady(t *testing.T) {
	client := fake.NewClientset()
	ch := make(chan PodUpdate, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go NewAPISource(kubefake.Wrap(client), "n", ch).Run(ctx)
	if u := recvUpdate(t, ch); u.Op != SET || len(u.Pods) != 0 {
		t.Fatalf("first update = %s %v, want an empty SET", u.Op, u.Pods)
	}
}

// Through the merger: an annotation-only change is an UPDATE, a deletion
// timestamp a DELETE, and the source is ready once listed.
func TestAPISourceThroughMerger(t *testing.T) {
	client := fake.NewClientset(apiPod("a", "u1", "1", "n"))
	m := NewMerger(Incremental)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := NewAPISource(kubefake.Wrap(client), "n", m.Channel(pod.ApiserverSource))
	go m.Run(ctx)
	go src.Run(ctx)

	u := recvUpdate(t, m.Updates())
	if u.Op != ADD || len(u.Pods) != 1 || u.Pods[0].Annotations[pod.ConfigSourceAnnotationKey] != pod.ApiserverSource {
		t.Fatalf("first = %s %v", u.Op, u.Pods)
	}
	pods := client.CoreV1().Pods("default")
	a := apiPod("a", "u1", "2", "n")
	a.Annotations = map[string]string{"note": "1"}
	if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := recvUpdate(t, m.Updates()); u.Op != UPDATE {
		t.Fatalf("annotation change = %s", u.Op)
	}
	a = a.DeepCopy()
	a.ResourceVersion = "3"
	now := metav1.Now()
	grace := int64(3)
	a.DeletionTimestamp, a.DeletionGracePeriodSeconds = &now, &grace
	if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := recvUpdate(t, m.Updates()); u.Op != DELETE || *u.Pods[0].DeletionGracePeriodSeconds != 3 {
		t.Fatalf("deletion = %s %v", u.Op, u.Pods)
	}
}

func TestUnavailable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want bool
	}{
		{errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), true},
		{context.DeadlineExceeded, true},
		{apierrors.NewServiceUnavailable("starting"), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewInternalError(errors.New("etcd")), true},
		{apierrors.NewNotFound(gr, "x"), false},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{apierrors.NewResourceExpired("too old"), false},
	}
	for _, tc := range tests {
		if got := unavailable(tc.err); got != tc.want {
			t.Errorf("unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// While the API server does not answer, the list is repeated every
// apiRetryPeriod (not with the reflector's growing backoff), and the source
// becomes ready as soon as it answers.
func TestAPISourceRetriesUntilAnswered(t *testing.T) {
	old := apiRetryPeriod
	apiRetryPeriod = 20 * time.Millisecond
	defer func() { apiRetryPeriod = old }()

	client := fake.NewClientset(apiPod("a", "u1", "1", "n"))
	var fails atomic.Int32
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Add(1) <= 5 {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	ch := make(chan PodUpdate, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begin := time.Now()
	go NewAPISource(kubefake.Wrap(client), "n", ch).Run(ctx)
	u := recvUpdate(t, ch)
	if u.Op != SET || len(u.Pods) != 1 {
		t.Fatalf("first = %s %v", u.Op, u.Pods)
	}
	// The reflector's own backoff would have waited 0.8 s, then 1.6 s, ...
	if took := time.Since(begin); took > 700*time.Millisecond {
		t.Errorf("ready after %s with 5 failed lists 20 ms apart", took)
	}
}
