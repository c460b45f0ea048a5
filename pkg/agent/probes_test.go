package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/prober"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/status"
)

// statusRecorder is a Cluster that keeps the statuses set.
type statusRecorder struct {
	mu       sync.Mutex
	statuses []v1.PodStatus
	mirrors  int // SyncMirror calls
}

func (r *statusRecorder) SyncMirror(context.Context, *v1.Pod, *v1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mirrors++
	return nil
}
func (r *statusRecorder) DeleteMirror(context.Context, *v1.Pod) error { return nil }
func (r *statusRecorder) PodKilled(*v1.Pod, v1.PodStatus)             {}
func (r *statusRecorder) ForgetPod(types.UID)                         {}
func (r *statusRecorder) SetPodStatus(_ *v1.Pod, s v1.PodStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, s)
}

func (r *statusRecorder) all() []v1.PodStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]v1.PodStatus(nil), r.statuses...)
}

// fixedProber reports container app not ready.
type fixedProber struct {
	mu       sync.Mutex
	observed int
}

func (f *fixedProber) Observe(*v1.Pod, *runtime.PodStatus, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed++
}
func (f *fixedProber) View(types.UID) prober.View {
	return prober.View{"app": {ID: "c", Started: true, Ready: false}}
}
func (f *fixedProber) Remove(types.UID) {}

func condStatus(s v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func TestProbesAndTermination(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	updates := make(chan config.PodUpdate, 10)
	rec := &statusRecorder{}
	probes := &fixedProber{}
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates, Sources: sets.New(pod.ApiserverSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Cluster: rec, Prober: probes})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()

	p := staticPod("a")
	p.Annotations[pod.ConfigSourceAnnotationKey] = pod.ApiserverSource
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.ApiserverSource, Pods: []*v1.Pod{p}}
	poll.Eventually(t, "pod running", func() bool {
		ss := rec.all()
		return len(ss) > 0 && ss[len(ss)-1].Phase == v1.PodRunning
	})
	if s := rec.all(); condStatus(s[len(s)-1], v1.PodReady) != v1.ConditionFalse || s[len(s)-1].ContainerStatuses[0].Ready {
		t.Fatalf("the probes say not ready, the status %+v", s[len(s)-1])
	}

	// Deletion: the first status after it is not ready yet still Running
	// (its containers are being stopped), never terminal.
	deleting := p.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	before := len(rec.all())
	updates <- config.PodUpdate{Op: config.DELETE, Source: pod.ApiserverSource, Pods: []*v1.Pod{deleting}}
	poll.Eventually(t, "pod killed", func() bool { return rt.count(rt.killed, "a") == 1 })
	poll.Eventually(t, "statuses after the kill", func() bool { return len(rec.all()) >= before+2 })
	first := rec.all()[before]
	if first.Phase != v1.PodRunning || condStatus(first, v1.PodReady) != v1.ConditionFalse {
		t.Fatalf("status published before the kill: phase %s Ready %s", first.Phase, condStatus(first, v1.PodReady))
	}
	cancel()
	<-done
}
