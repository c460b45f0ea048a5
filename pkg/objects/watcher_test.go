package objects

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
)

// A watch reports the changes of its object to the pods using it, serves
// reads once synced, and Run returns only once every watch it started has
// stopped.
func TestWatcherFollowsAndStops(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewClientset()
	changed := make(chan Ref, 10)
	w := New(kubefake.Wrap(client), func(ref Ref, users []types.UID, _ bool) {
		if len(users) == 1 && users[0] == "uid-1" {
			changed <- ref
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{
			ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}}}},
	}}
	if _, err := w.ConfigMap(ctx, pod, "cfg"); !apierrors.IsNotFound(err) {
		t.Fatalf("missing config map: %v", err)
	}
	if n := w.Watches(); n != 1 {
		t.Fatalf("%d watches, want 1", n)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ref := <-changed:
		if ref != (Ref{ConfigMap, "ns", "cfg"}) {
			t.Errorf("changed %v", ref)
		}
	case <-time.After(poll.DefaultTimeout):
		t.Fatal("no change reported")
	}
	poll.Eventually(t, "the config map from the watch", func() bool {
		_, known := w.cached(Ref{ConfigMap, "ns", "cfg"})
		return known
	})
	if cm, err := w.ReadConfigMap(ctx, "ns", "cfg"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("ReadConfigMap: %v, %v", cm, err)
	}

	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
	// A pod that comes after the stop starts no watch.
	w.SetPod("uid-2", []Ref{{Secret, "ns", "s"}})
	w.RemovePod("uid-1")
	w.RemovePod("uid-2")
	if n := w.Watches(); n != 0 {
		t.Errorf("%d watches left", n)
	}
}
