package volumes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

type providerHarness struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	client *fake.Clientset
	tokens *tokenServer
	pods   *fakePods
	p      *Provider
	root   string
}

type fakePods struct {
	mu   sync.Mutex
	pods map[types.UID]*v1.Pod
}

func (f *fakePods) PodByUID(uid types.UID) (*v1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[uid]
	return p, ok
}

func (f *fakePods) set(p *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.DeletionTimestamp != nil {
		delete(f.pods, p.UID)
		return
	}
	f.pods[p.UID] = p
}

func newProviderHarness(t *testing.T) *providerHarness {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"},
		Data:       map[string]string{"ca.crt": "CA1"},
	})
	srv := &tokenServer{clock: clk}
	srv.install(client)
	pods := &fakePods{pods: map[types.UID]*v1.Pod{}}
	root := t.TempDir()
	p, err := NewProvider(Options{Client: kubefake.Wrap(client), RootDir: root, Pods: pods, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// Unit tests need no root: the directory stays a plain one.
	p.mountTmpfs = func(dir string, _ *int64) error { return os.MkdirAll(dir, 0o755) }
	return &providerHarness{t: t, clock: clk, client: client, tokens: srv, pods: pods, p: p, root: root}
}

func apiAccessPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			ServiceAccountName: "default",
			Volumes: []v1.Volume{
				{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: kubeAPIAccess()}},
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

func (h *providerHarness) read(pod *v1.Pod, vol, file string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(layout.VolumeDir(h.root, pod.UID, layout.PluginProjected, vol), file))
	if err != nil {
		h.t.Fatalf("read %s/%s: %v", vol, file, err)
	}
	return string(b)
}

func TestProviderPrepareAndRefresh(t *testing.T) {
	h := newProviderHarness(t)
	ctx := context.Background()
	pod := apiAccessPod()
	h.pods.set(pod)
	if err := h.p.Prepare(ctx, pod); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	const vol = "kube-api-access-abcde"
	if got := h.read(pod, vol, "token"); got != "token-1" {
		t.Errorf("token = %q", got)
	}
	if got := h.read(pod, vol, "ca.crt"); got != "CA1" {
		t.Errorf("ca.crt = %q", got)
	}
	if got := h.read(pod, vol, "namespace"); got != "default" {
		t.Errorf("namespace = %q", got)
	}
	fi, err := os.Stat(filepath.Join(layout.VolumeDir(h.root, pod.UID, layout.PluginProjected, vol), "token"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("token mode = %v, %v; want 0644 (defaultMode)", fi.Mode(), err)
	}

	// Further Prepares (container restarts, syncs) make no API calls.
	before := len(h.client.Actions())
	if err := h.p.Prepare(ctx, pod); err != nil || len(h.client.Actions()) != before {
		t.Errorf("second Prepare: %v, API calls %v", err, h.client.Actions()[before:])
	}

	// The refresher renews the token at 80 % and picks up a new CA.
	h.clock.Step(50 * time.Minute)
	cm, _ := h.client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	cm.Data["ca.crt"] = "CA2"
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.p.RefreshAll(ctx)
	if got := h.read(pod, vol, "token"); got != "token-2" {
		t.Errorf("token after refresh = %q, want token-2", got)
	}
	if got := h.read(pod, vol, "ca.crt"); got != "CA2" {
		t.Errorf("ca.crt after refresh = %q", got)
	}

	// A refresh failure keeps what is there.
	if err := h.client.CoreV1().ConfigMaps("default").Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.p.RefreshAll(ctx)
	if got := h.read(pod, vol, "ca.crt"); got != "CA2" {
		t.Errorf("ca.crt after failed refresh = %q, want the old content", got)
	}
	// ... but a container does not start on it: Prepare tries again.
	if err := h.p.Prepare(ctx, pod); err == nil {
		t.Error("Prepare after a failed refresh: no error")
	}

	// A pod that left the node is forgotten: no more token requests.
	gone := pod.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
	h.pods.set(gone)
	h.clock.Step(time.Hour)
	before = h.tokens.count()
	h.p.RefreshAll(ctx)
	h.p.RefreshAll(ctx)
	if h.tokens.count() != before {
		t.Errorf("tokens requested for a pod that left: %d -> %d", before, h.tokens.count())
	}
	h.p.mu.Lock()
	n := len(h.p.tracked)
	h.p.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pods still tracked", n)
	}
}

func TestProviderRefreshUsesCurrentPod(t *testing.T) {
	h := newProviderHarness(t)
	ctx := context.Background()
	pod := apiAccessPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
	}}}}
	h.pods.set(pod)
	if err := h.p.Prepare(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := h.read(pod, "info", "labels"); got != `app="web"` {
		t.Errorf("labels = %q", got)
	}
	relabelled := pod.DeepCopy()
	relabelled.Labels["tier"] = "front"
	h.pods.set(relabelled)
	h.p.RefreshAll(ctx)
	if got := h.read(pod, "info", "labels"); got != "app=\"web\"\ntier=\"front\"" {
		t.Errorf("labels after relabel = %q", got)
	}
}

func TestProviderPrepareError(t *testing.T) {
	h := newProviderHarness(t)
	pod := apiAccessPod()
	pod.Namespace = "other" // no kube-root-ca.crt there
	err := h.p.Prepare(context.Background(), pod)
	want := `MountVolume.SetUp failed for volume "kube-api-access-abcde": configmaps "kube-root-ca.crt" not found`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestProviderCleanupStopsRefresh(t *testing.T) {
	h := newProviderHarness(t)
	ctx := context.Background()
	pod := apiAccessPod()
	h.pods.set(pod)
	if err := h.p.Prepare(ctx, pod); err != nil {
		t.Fatal(err)
	}
	h.p.Cleanup(pod.UID)
	h.clock.Step(2 * time.Hour)
	h.p.RefreshAll(ctx)
	if h.tokens.count() != 1 {
		t.Errorf("%d token requests after Cleanup, want 1", h.tokens.count())
	}
}

func TestProviderRunStopsWithContext(t *testing.T) {
	h := newProviderHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	pod := apiAccessPod()
	h.pods.set(pod)
	if err := h.p.Prepare(ctx, pod); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.p.Run(ctx) }()
	// Tick until the refresher renewed the token.
	poll.Eventually(t, "the refresher's renewal of the token", func() bool {
		if h.clock.HasWaiters() {
			h.clock.Step(DefaultResyncPeriod * 50)
		}
		return h.tokens.count() >= 2
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(poll.DefaultTimeout):
		t.Fatal("Run did not return after cancel")
	}
	if !strings.HasPrefix(h.read(pod, "kube-api-access-abcde", "token"), "token-") {
		t.Error("no token after refresh")
	}
}

// A label changed on a running pod reaches its downward API file at the
// next Prepare (every pod update syncs its worker), not at the resync.
func TestProviderPrepareRewritesChangedLabels(t *testing.T) {
	h := newProviderHarness(t)
	ctx := context.Background()
	pod := apiAccessPod()
	pod.Spec.Containers = []v1.Container{{Name: "app"}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "podinfo", VolumeSource: v1.VolumeSource{
		DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}},
		}}}})
	h.pods.set(pod)
	if err := h.p.Prepare(ctx, pod); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	read := func(file string) string {
		t.Helper()
		vol := &pod.Spec.Volumes[len(pod.Spec.Volumes)-1]
		dir, _ := criconfig.APIVolumePath(h.root, pod.UID, vol)
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("labels"); got != `app="web"` {
		t.Errorf("labels = %q", got)
	}
	// No limit and no allocatable given: 0.
	if got := read("mem"); got != "0" {
		t.Errorf("mem = %q", got)
	}

	updated := pod.DeepCopy()
	updated.ResourceVersion = "2"
	updated.Labels["tier"] = "front"
	if err := h.p.Prepare(ctx, updated); err != nil {
		t.Fatalf("Prepare after update: %v", err)
	}
	if got := read("labels"); got != "app=\"web\"\ntier=\"front\"" {
		t.Errorf("labels after update = %q", got)
	}

	// A status-only update writes nothing and calls no API.
	before := len(h.client.Actions())
	status := updated.DeepCopy()
	status.ResourceVersion = "3"
	status.Status.Phase = v1.PodRunning
	if err := h.p.Prepare(ctx, status); err != nil || len(h.client.Actions()) != before {
		t.Errorf("status-only Prepare: %v, %d API calls", err, len(h.client.Actions())-before)
	}
}
