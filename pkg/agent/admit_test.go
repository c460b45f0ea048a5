package agent

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/security"
	"github.com/nodelet/nodelet/pkg/status"
)

func TestAdmissionRefusesPod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	updates := make(chan config.PodUpdate, 10)
	events := record.NewFakeRecorder(10)
	admit := func(p *v1.Pod, _ []*v1.Pod) *security.Rejection {
		if p.Name == "bad" {
			return &security.Rejection{Reason: "SysctlForbidden", Message: `forbidden sysctl: "vm.swappiness" not allowlisted`}
		}
		return nil
	}
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates, Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Admit: admit, Recorder: events})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()

	updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("bad"), staticPod("good")}}
	poll.Eventually(t, "good pod running", func() bool {
		st, ok := a.statuses.Get("good")
		return ok && st.Phase == v1.PodRunning
	})
	st, ok := a.statuses.Get("bad")
	if !ok || st.Phase != v1.PodFailed || st.Reason != "SysctlForbidden" ||
		st.Message != `Pod was rejected: forbidden sysctl: "vm.swappiness" not allowlisted` {
		t.Fatalf("refused pod status %+v", st)
	}
	if e := <-events.Events; !strings.HasPrefix(e, "Warning SysctlForbidden forbidden sysctl") {
		t.Fatalf("event %q", e)
	}
	// An edit never brings a refused pod to life.
	updates <- config.PodUpdate{Op: config.UPDATE, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("bad")}}
	updates <- config.PodUpdate{Op: config.REMOVE, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("bad")}}
	poll.Eventually(t, "refused pod forgotten", func() bool { _, ok := a.statuses.Get("bad"); return !ok })
	if n := rt.count(rt.synced, "bad"); n != 0 {
		t.Fatalf("refused pod synced %d times", n)
	}
	// Back with an acceptable spec under the same UID: checked afresh.
	good := staticPod("bad")
	good.Name = "fixed"
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{good}}
	poll.Eventually(t, "fixed pod running", func() bool { return rt.count(rt.synced, "bad") > 0 })
	cancel()
	<-done
}

func TestRefusedBeforeStaysRefused(t *testing.T) {
	a := mustNew(t, Config{}, Deps{Runtime: newFakeRuntime(), Relister: &fakeRelister{}, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.ApiserverSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Admit: func(*v1.Pod, []*v1.Pod) *security.Rejection { return nil }})
	p := staticPod("was-refused")
	p.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "AppArmor", Message: "Pod was rejected: Cannot enforce AppArmor"}
	if a.admitted(p, true) {
		t.Fatal("a pod refused at admission before runs now")
	}
	if st, _ := a.statuses.Get(p.UID); st.Reason != "AppArmor" {
		t.Fatalf("status %+v", st)
	}
	// A static pod's manifest may carry any status: it is not a record of
	// what ran, so the pod runs.
	done := staticPod("done")
	done.Status.Phase = v1.PodSucceeded
	if !a.admitted(done, true) {
		t.Fatal("a static pod with a terminal phase in its manifest does not run")
	}
}

// TestFinishedAPIPodNotRunAgain: after a restart of nodelet, an API pod the
// API shows Succeeded or Failed is not started again, even when nothing of
// it is left in the runtime (its containers were collected).
func TestFinishedAPIPodNotRunAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	updates := make(chan config.PodUpdate, 10)
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: &fakeRelister{changed: make(chan pleg.Change)}, Updates: updates, Sources: sets.New(pod.ApiserverSource), Pods: pod.NewManager(), Statuses: status.NewCache()})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()

	apiPod := func(name string, phase v1.PodPhase) *v1.Pod {
		p := staticPod(name)
		p.Annotations[pod.ConfigSourceAnnotationKey] = pod.ApiserverSource
		p.Status = v1.PodStatus{Phase: phase, Reason: "Completed"}
		return p
	}
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.ApiserverSource, Pods: []*v1.Pod{
		apiPod("succeeded", v1.PodSucceeded), apiPod("failed", v1.PodFailed), apiPod("running", v1.PodRunning)}}
	poll.Eventually(t, "running pod synced", func() bool { return rt.count(rt.synced, "running") > 0 })
	for _, uid := range []types.UID{"succeeded", "failed"} {
		if n := rt.count(rt.synced, uid); n != 0 {
			t.Errorf("finished pod %s synced %d times", uid, n)
		}
		if st, _ := a.statuses.Get(uid); st.Reason != "Completed" {
			t.Errorf("finished pod %s: status %+v, want the API's", uid, st)
		}
	}
	// Deleted from the API, it leaves the node like any refused pod.
	updates <- config.PodUpdate{Op: config.REMOVE, Source: pod.ApiserverSource, Pods: []*v1.Pod{apiPod("succeeded", v1.PodSucceeded)}}
	poll.Eventually(t, "finished pod forgotten", func() bool { _, ok := a.statuses.Get("succeeded"); return !ok })
	cancel()
	<-done
}

func TestAdmissionStopsWhatRunsOfARefusedPod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	rt.running["bad"] = true // left running by an earlier nodelet
	relister := &fakeRelister{changed: make(chan pleg.Change), snapshot: []*runtime.Pod{{
		UID: "bad", Source: pod.FileSource, Sandboxes: []runtime.SandboxRef{{ID: "sb", State: runtime.SandboxStateReady}}}}}
	updates := make(chan config.PodUpdate, 10)
	a := mustNew(t, Config{NodeName: "n", HousekeepingPeriod: time.Hour}, Deps{Runtime: rt, Relister: relister, Updates: updates, Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Admit: func(*v1.Pod, []*v1.Pod) *security.Rejection {
			return &security.Rejection{Reason: "AppArmor", Message: "no"}
		}})
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	updates <- config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: []*v1.Pod{staticPod("bad")}}
	poll.Eventually(t, "refused pod's containers stopped", func() bool { return rt.count(rt.killed, "bad") == 1 })
	if st, _ := a.statuses.Get("bad"); st.Phase != v1.PodFailed {
		t.Fatalf("status %+v", st)
	}
	cancel()
	<-done
}

// TestAdmissionSeesTheActivePods: a pod is judged beside the pods admitted
// before it that have not finished; refused and finished pods do not count.
func TestAdmissionSeesTheActivePods(t *testing.T) {
	var seen [][]string
	a := mustNew(t, Config{}, Deps{Runtime: newFakeRuntime(), Relister: &fakeRelister{}, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Admit: func(p *v1.Pod, active []*v1.Pod) *security.Rejection {
			var names []string
			for _, o := range active {
				names = append(names, o.Name)
			}
			slices.Sort(names)
			seen = append(seen, names)
			if p.Name == "refused" {
				return &security.Rejection{Reason: "OutOfcpu", Message: "no"}
			}
			return nil
		}})
	for _, name := range []string{"a", "refused", "done", "b"} {
		p := staticPod(name)
		a.pods.AddOrUpdatePod(p)
		a.admitted(p, true)
		if name == "done" {
			a.statuses.Set(p.UID, v1.PodStatus{Phase: v1.PodSucceeded})
		}
	}
	want := [][]string{nil, {"a"}, {"a"}, {"a"}}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("active pods seen by admission %q, want %q", seen, want)
	}
	// Refused for not fitting before a restart: stays refused.
	p := staticPod("was-out-of-cpu")
	p.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu"}
	if a.admitted(p, true) {
		t.Error("a pod refused for OutOfcpu before runs now")
	}
}

// TestAdmissionOldestFirst: pods arriving together are admitted oldest
// first, so which of them fit does not depend on the source's order.
func TestAdmissionOldestFirst(t *testing.T) {
	var order []string
	a := mustNew(t, Config{}, Deps{Runtime: newFakeRuntime(), Relister: &fakeRelister{}, Updates: make(chan config.PodUpdate), Sources: sets.New(pod.FileSource), Pods: pod.NewManager(), Statuses: status.NewCache(),
		Admit: func(p *v1.Pod, _ []*v1.Pod) *security.Rejection {
			order = append(order, p.Name)
			return &security.Rejection{Reason: "OutOfpods", Message: "test"}
		}})
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var pods []*v1.Pod
	for i, name := range []string{"young", "old", "middle"} {
		p := staticPod(name)
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration([]int{3, 1, 2}[i]) * time.Minute))
		pods = append(pods, p)
	}
	a.handleUpdate(config.PodUpdate{Op: config.ADD, Source: pod.FileSource, Pods: pods})
	if want := []string{"old", "middle", "young"}; !slices.Equal(order, want) {
		t.Errorf("admitted in order %q, want %q", order, want)
	}
	if pods[0].Name != "young" {
		t.Error("the update's own slice was reordered")
	}
}
