package apistatus

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
	"github.com/nodelet/nodelet/pkg/pod"
)

func apiPod(name, uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid),
			Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.ApiserverSource}},
		Spec:   v1.PodSpec{NodeName: "n", Containers: []v1.Container{{Name: "c", Image: "busybox:1.35"}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func status(phase v1.PodPhase, ip string) v1.PodStatus {
	return v1.PodStatus{Phase: phase, PodIP: ip, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue, t0)}}
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	pods   *pod.Manager
	m      *Manager
	cancel context.CancelFunc
	done   chan struct{}
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	h := &harness{t: t, client: fake.NewClientset(objs...), pods: pod.NewManager()}
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			h.pods.AddOrUpdatePod(p)
		}
	}
	h.m = NewManager(kubefake.Wrap(h.client), h.pods, Options{RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, ReconcilePeriod: time.Hour})
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() { h.m.Run(ctx); close(h.done) }()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// verbs lists the pod writes made, as "patch <name>" / "delete <name>".
func (h *harness) verbs() []string {
	var out []string
	for _, a := range h.client.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			out = append(out, "patch "+a.GetName())
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	return out
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	poll.Eventually(h.t, what, cond)
}

func (h *harness) apiStatus(name string) v1.PodStatus {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p.Status
}

// settle waits until the queue is empty and every worker idle. The tests
// run in a synctest bubble (the workers, the queue and its retry timers on
// the bubble's fake clock), so idle means blocked for good: a write that
// was going to happen has happened.
func (h *harness) settle() {
	h.t.Helper()
	h.waitFor("idle queue", func() bool { return h.m.queue.Len() == 0 })
	synctest.Wait()
}

func TestWritesLatestStatusOnceCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		h := newHarness(t, p)
		// Queued before the workers run: three statuses, one write of the last.
		h.m.SetPodStatus(p, status(v1.PodPending, ""))
		h.m.SetPodStatus(p, status(v1.PodRunning, ""))
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.88.0.7"))
		h.run()
		h.waitFor("status written", func() bool { return h.apiStatus("a").PodIP == "10.88.0.7" })
		h.settle()
		if n := len(h.verbs()); n != 1 {
			t.Fatalf("writes = %v, want one", h.verbs())
		}
		// Unchanged status: no write.
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.88.0.7"))
		h.settle()
		if n := len(h.verbs()); n != 1 {
			t.Fatalf("writes after an unchanged status = %v", h.verbs())
		}
	})
}

// A status set while an older one is being written is written after it, so
// the newest one is what the API ends with.
func TestNeverOlderOverNewer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		h := newHarness(t, p)
		release := make(chan struct{})
		var first atomic.Bool
		var patches atomic.Int32
		// The fake clientset holds its lock while a reactor runs: nothing else
		// may call it until release.
		h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			patches.Add(1)
			if first.CompareAndSwap(false, true) {
				<-release
			}
			return false, nil, nil
		})
		h.run()
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.0.0.1"))
		h.waitFor("first write started", first.Load)
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.0.0.2"))
		synctest.Wait() // every worker idle: another one must not be writing
		if n := patches.Load(); n != 1 {
			close(release)
			t.Fatalf("a second write ran alongside the first: %d writes", n)
		}
		close(release)
		h.waitFor("newest status", func() bool { return h.apiStatus("a").PodIP == "10.0.0.2" })
		h.settle()
		if got := h.apiStatus("a").PodIP; got != "10.0.0.2" {
			t.Fatalf("API ends with %s", got)
		}
	})
}

func TestFailedWritesRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		h := newHarness(t, p)
		var n atomic.Int32
		h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			switch n.Add(1) {
			case 1:
				return true, nil, errors.New("connection refused")
			case 2:
				return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
			}
			return false, nil, nil
		})
		h.run()
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.0.0.1"))
		h.waitFor("written after retries", func() bool { return h.apiStatus("a").PodIP == "10.0.0.1" })
		if n.Load() != 3 {
			t.Fatalf("patch attempts = %d, want 3", n.Load())
		}
	})
}

func TestReplaced(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	uidImmutable := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "uid"), "u0", "field is immutable")})
	otherInvalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", field.ErrorList{
		field.Invalid(field.NewPath("status", "phase"), "x", "bad")})
	tests := []struct {
		err  error
		want bool
	}{
		{uidImmutable, true},
		{apierrors.NewConflict(gr, "a", errors.New("precondition")), true},
		{otherInvalid, false},
		{apierrors.NewNotFound(gr, "a"), false},
		{errors.New("connection refused"), false},
	}
	for _, tc := range tests {
		if got := replaced(tc.err); got != tc.want {
			t.Errorf("replaced(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A patch refused because the name is another pod's now is not retried: the
// watch brings the new pod and its sync sets the status again.
func TestReplacedTargetNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		h := newHarness(t, p)
		var n atomic.Int32
		h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			n.Add(1)
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", field.ErrorList{
				field.Invalid(field.NewPath("metadata", "uid"), "u1", "field is immutable")})
		})
		h.run()
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.0.0.1"))
		h.settle()
		time.Sleep(10 * h.m.opts.RetryMax) // fake time: a retry would be due long before
		synctest.Wait()
		if n.Load() != 1 {
			t.Fatalf("patch attempts = %d, want 1", n.Load())
		}
	})
}

func TestStaticStatusLandsOnMirror(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		static := apiPod("web-n", "s1")
		static.Annotations = map[string]string{pod.ConfigSourceAnnotationKey: pod.FileSource, pod.ConfigHashAnnotationKey: "h1"}
		mirror := apiPod("web-n", "m1")
		mirror.Annotations[pod.ConfigMirrorAnnotationKey] = "h1"
		h := newHarness(t, mirror)
		h.pods.AddOrUpdatePod(static)
		h.pods.RemovePod(mirror) // no mirror known yet
		h.run()

		h.m.SetPodStatus(static, status(v1.PodRunning, "10.0.0.3"))
		h.settle()
		if len(h.verbs()) != 0 {
			t.Fatalf("wrote without a mirror: %v", h.verbs())
		}
		// The mirror shows up; the static pod's next sync sets its status again.
		h.pods.AddOrUpdatePod(mirror)
		h.m.SetPodStatus(static, status(v1.PodRunning, "10.0.0.3"))
		h.waitFor("status on the mirror", func() bool { return h.apiStatus("web-n").PodIP == "10.0.0.3" })
		for _, a := range h.client.Actions() {
			if pa, ok := a.(k8stesting.PatchAction); ok && string(pa.GetPatch()) != "" {
				if want := `"uid":"m1"`; !strings.Contains(string(pa.GetPatch()), want) {
					t.Errorf("patch %s lacks the mirror's UID precondition", pa.GetPatch())
				}
			}
		}
	})
}

func TestKilledPodWrittenThenDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		now := metav1.Now()
		grace := int64(3)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
		h := newHarness(t, p)
		h.run()
		var mu sync.Mutex
		var opts metav1.DeleteOptions
		h.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			opts = a.(k8stesting.DeleteAction).GetDeleteOptions()
			mu.Unlock()
			return false, nil, nil
		})
		final := status(v1.PodSucceeded, "10.0.0.1")
		h.m.PodKilled(p, final)
		h.waitFor("pod deleted", func() bool {
			_, err := h.client.CoreV1().Pods("default").Get(context.Background(), "a", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if got := h.verbs(); len(got) != 2 || got[0] != "patch a" || got[1] != "delete a" {
			t.Fatalf("writes = %v, want the final status, then the delete", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != "u1" {
			t.Fatalf("delete options %+v", opts)
		}
		// Done is done: another pass deletes nothing more.
		h.m.PodKilled(p, final)
		h.settle()
		if got := h.verbs(); len(got) != 2 {
			t.Fatalf("writes after a second kill report = %v", got)
		}
	})
}

// What someone else changed is repaired at the next reconcile.
func TestReconcileRepairsForeignChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		h := newHarness(t, p)
		h.m.opts.ReconcilePeriod = 50 * time.Millisecond
		h.run()
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.0.0.1"))
		h.waitFor("written", func() bool { return h.apiStatus("a").PodIP == "10.0.0.1" })

		// Another writer changes the IP; the watch shows it.
		changed, err := h.client.CoreV1().Pods("default").Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed.Status.PodIP = "6.6.6.6"
		if _, err := h.client.CoreV1().Pods("default").UpdateStatus(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.pods.AddOrUpdatePod(changed)
		h.waitFor("repaired", func() bool { return h.apiStatus("a").PodIP == "10.0.0.1" })
	})
}

func TestForgetPodDropsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := apiPod("a", "u1")
		h := newHarness(t, p)
		h.m.SetPodStatus(p, status(v1.PodRunning, "10.0.0.1"))
		h.m.ForgetPod("u1")
		h.run()
		h.settle()
		if len(h.verbs()) != 0 {
			t.Fatalf("wrote a forgotten pod: %v", h.verbs())
		}
	})
}
