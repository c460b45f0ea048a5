package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// TestProviderFollowsChanges: a running provider rewrites a pod's config
// map volume when the object changes, makes a volume whose object was
// missing once it appears, and wakes the pods either way.
func TestProviderFollowsChanges(t *testing.T) {
	h := newProviderHarness(t)
	woken := make(chan types.UID, 10)
	h.p.wake = func(uid types.UID) { woken <- uid }
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- h.p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	cms := h.client.CoreV1().ConfigMaps("web")
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "web"},
		Data: map[string]string{"k": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "web", UID: "uid-cfg"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{
			{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			{Name: "late", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}},
		},
	}}
	h.pods.set(pod)
	if err := h.p.Prepare(ctx, pod); err == nil {
		t.Fatal("Prepare with a missing config map worked")
	}
	read := func(vol, file string) string {
		dir, _ := criconfig.APIVolumePath(h.root, pod.UID, &pod.Spec.Volumes[vol2idx(vol)])
		b, _ := os.ReadFile(filepath.Join(dir, file))
		return string(b)
	}
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "web"},
		Data: map[string]string{"x": "here"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the late config map's volume", func() bool { return read("late", "x") == "here" })
	if uid := <-woken; uid != pod.UID {
		t.Errorf("woke %s", uid)
	}
	if got := read("c", "k"); got != "one" {
		t.Errorf("c/k = %q", got)
	}
	if _, err := cms.Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "web"},
		Data: map[string]string{"k": "two"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the update", func() bool { return read("c", "k") == "two" })

	// A forgotten pod's objects are no longer watched.
	h.p.Cleanup(pod.UID)
	if n := h.p.watcher.Watches(); n != 0 {
		t.Errorf("%d watches left after Cleanup", n)
	}
}

func vol2idx(name string) int {
	if name == "c" {
		return 0
	}
	return 1
}
