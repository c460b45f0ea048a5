package config

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/pod"
)

var (
	t0 = time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	t1 = t0.Add(time.Minute)
)

// testPod is a minimal API-style pod; mods change it.
func testPod(uid string, mods ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: "pod-" + uid, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.35"}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// stored is testPod as the merger stores it after an ADD at t0 from "api".
func stored(uid string, mods ...func(*v1.Pod)) *v1.Pod {
	p := testPod(uid, mods...)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[pod.ConfigSourceAnnotationKey] = "api"
	p.Annotations[pod.ConfigFirstSeenAnnotationKey] = t0.Format(time.RFC3339Nano)
	return p
}

func withImage(img string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Image = img }
}

func withAnnotation(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func withLabel(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = map[string]string{k: v} }
}

func withName(n string) func(*v1.Pod) { return func(p *v1.Pod) { p.Name = n } }

func deleting(p *v1.Pod) {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
	p.DeletionGracePeriodSeconds = ptr(int64(30))
}

func running(p *v1.Pod) { p.Status.Phase = v1.PodRunning }

func uids(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	return out
}

func state(pods ...*v1.Pod) map[types.UID]*v1.Pod {
	m := map[types.UID]*v1.Pod{}
	for _, p := range pods {
		m[p.UID] = p
	}
	return m
}

func TestApplyUpdate(t *testing.T) {
	type want struct {
		removes, adds, updates, deletes, reconciles []string
		next                                        []string
		rejected                                    int
	}
	tests := []struct {
		name string
		cur  []*v1.Pod
		in   PodUpdate
		want want
	}{{
		name: "first snapshot adds",
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a"), testPod("b")}},
		want: want{adds: []string{"a", "b"}, next: []string{"a", "b"}},
	}, {
		name: "empty snapshot of empty source changes nothing",
		in:   PodUpdate{Op: SET},
		want: want{next: []string{}},
	}, {
		name: "identical snapshot changes nothing",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}},
		want: want{next: []string{"a"}},
	}, {
		name: "spec change is an update",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", withImage("busybox:1.36"))}},
		want: want{updates: []string{"a"}, next: []string{"a"}},
	}, {
		name: "annotation-only change is an update",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", withAnnotation("team", "x"))}},
		want: want{updates: []string{"a"}, next: []string{"a"}},
	}, {
		name: "removed annotation is an update",
		cur:  []*v1.Pod{stored("a", withAnnotation("team", "x"))},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}},
		want: want{updates: []string{"a"}, next: []string{"a"}},
	}, {
		name: "label change is an update",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", withLabel("app", "web"))}},
		want: want{updates: []string{"a"}, next: []string{"a"}},
	}, {
		name: "merger's own annotations are not a change",
		cur:  []*v1.Pod{stored("a")},
		in: PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a",
			withAnnotation(pod.ConfigFirstSeenAnnotationKey, "yesterday"),
			withAnnotation(pod.ConfigSourceAnnotationKey, "other"))}},
		want: want{next: []string{"a"}},
	}, {
		name: "deletion timestamp is a delete",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", deleting)}},
		want: want{deletes: []string{"a"}, next: []string{"a"}},
	}, {
		name: "pod already deleting and unchanged is nothing",
		cur:  []*v1.Pod{stored("a", deleting)},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", deleting)}},
		want: want{next: []string{"a"}},
	}, {
		name: "new pod with deletion timestamp is still an add",
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", deleting)}},
		want: want{adds: []string{"a"}, next: []string{"a"}},
	}, {
		name: "status-only change is a reconcile",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", running)}},
		want: want{reconciles: []string{"a"}, next: []string{"a"}},
	}, {
		name: "spec and status change is only an update",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", running, withImage("x:2"))}},
		want: want{updates: []string{"a"}, next: []string{"a"}},
	}, {
		name: "pod gone from snapshot is a remove",
		cur:  []*v1.Pod{stored("a"), stored("b")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("b")}},
		want: want{removes: []string{"a"}, next: []string{"b"}},
	}, {
		name: "empty snapshot removes everything, sorted",
		cur:  []*v1.Pod{stored("c"), stored("a"), stored("b")},
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{}},
		want: want{removes: []string{"a", "b", "c"}, next: []string{}},
	}, {
		name: "every kind of change at once",
		cur:  []*v1.Pod{stored("gone"), stored("upd"), stored("del"), stored("rec"), stored("same")},
		in: PodUpdate{Op: SET, Pods: []*v1.Pod{
			testPod("new"), testPod("upd", withImage("x:2")), testPod("del", deleting), testPod("rec", running), testPod("same"),
		}},
		want: want{
			removes: []string{"gone"}, adds: []string{"new"}, updates: []string{"upd"},
			deletes: []string{"del"}, reconciles: []string{"rec"},
			next: []string{"del", "new", "rec", "same", "upd"},
		},
	}, {
		name: "incremental add upserts and keeps the rest",
		cur:  []*v1.Pod{stored("a"), stored("b")},
		in:   PodUpdate{Op: ADD, Pods: []*v1.Pod{testPod("c"), testPod("a", withImage("x:2"))}},
		want: want{adds: []string{"c"}, updates: []string{"a"}, next: []string{"a", "b", "c"}},
	}, {
		name: "incremental delete input",
		cur:  []*v1.Pod{stored("a"), stored("b")},
		in:   PodUpdate{Op: DELETE, Pods: []*v1.Pod{testPod("a", deleting)}},
		want: want{deletes: []string{"a"}, next: []string{"a", "b"}},
	}, {
		name: "incremental reconcile input",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: RECONCILE, Pods: []*v1.Pod{testPod("a", running)}},
		want: want{reconciles: []string{"a"}, next: []string{"a"}},
	}, {
		name: "incremental remove",
		cur:  []*v1.Pod{stored("a"), stored("b")},
		in:   PodUpdate{Op: REMOVE, Pods: []*v1.Pod{testPod("b"), testPod("unknown")}},
		want: want{removes: []string{"b"}, next: []string{"a"}},
	}, {
		name: "duplicate name in one input: first wins",
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", withName("web")), testPod("b", withName("web"))}},
		want: want{adds: []string{"a"}, next: []string{"a"}, rejected: 1},
	}, {
		name: "duplicate UID in one input: first wins",
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a"), testPod("a", withName("other"))}},
		want: want{adds: []string{"a"}, next: []string{"a"}, rejected: 1},
	}, {
		name: "pod without UID is rejected",
		in:   PodUpdate{Op: SET, Pods: []*v1.Pod{testPod(""), nil}},
		want: want{next: []string{}, rejected: 1},
	}, {
		name: "unknown operation changes nothing",
		cur:  []*v1.Pod{stored("a")},
		in:   PodUpdate{Op: Operation(42), Pods: []*v1.Pod{testPod("b")}},
		want: want{next: []string{"a"}, rejected: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, ch, rejected := applyUpdate(state(tt.cur...), tt.in, "api", t1)
			got := want{
				removes: uids(ch.removes), adds: uids(ch.adds), updates: uids(ch.updates),
				deletes: uids(ch.deletes), reconciles: uids(ch.reconciles),
				rejected: len(rejected),
			}
			nextPods := make([]*v1.Pod, 0, len(next))
			for _, p := range next {
				nextPods = append(nextPods, p)
			}
			sortPods(nextPods)
			got.next = uids(nextPods)
			norm := func(s []string) []string {
				if s == nil {
					return []string{}
				}
				return s
			}
			for _, w := range []*want{&got, &tt.want} {
				w.removes, w.adds, w.updates = norm(w.removes), norm(w.adds), norm(w.updates)
				w.deletes, w.reconciles, w.next = norm(w.deletes), norm(w.reconciles), norm(w.next)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestApplyUpdateStoresWhatItEmits(t *testing.T) {
	next, ch, _ := applyUpdate(state(stored("a")), PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", running)}}, "api", t1)
	if ch.reconciles[0] != next["a"] {
		t.Fatal("reconciled pod is not the stored pod")
	}
	if next["a"].Status.Phase != v1.PodRunning {
		t.Errorf("stored status = %q, want the new status", next["a"].Status.Phase)
	}
}

func TestApplyUpdateFirstSeen(t *testing.T) {
	seen := func(p *v1.Pod) string { return p.Annotations[pod.ConfigFirstSeenAnnotationKey] }
	t2 := t1.Add(time.Minute)

	s, ch, _ := applyUpdate(nil, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a")}}, "api", t0)
	if got, want := seen(ch.adds[0]), t0.Format(time.RFC3339Nano); got != want {
		t.Fatalf("seen on add = %q, want %q", got, want)
	}
	if got := ch.adds[0].Annotations[pod.ConfigSourceAnnotationKey]; got != "api" {
		t.Errorf("source annotation = %q, want api", got)
	}
	steps := []struct {
		name string
		pod  *v1.Pod
		at   time.Time
	}{
		{"spec update", testPod("a", withImage("x:2")), t1},
		// A source echoing a different seen value must not move it.
		{"annotation update with foreign seen", testPod("a", withImage("x:2"), withAnnotation("k", "v"), withAnnotation(pod.ConfigFirstSeenAnnotationKey, "bogus")), t2},
		{"reconcile", testPod("a", withImage("x:2"), withAnnotation("k", "v"), running), t2},
		{"delete", testPod("a", withImage("x:2"), withAnnotation("k", "v"), running, deleting), t2},
	}
	for _, st := range steps {
		var ch changes
		s, ch, _ = applyUpdate(s, PodUpdate{Op: SET, Pods: []*v1.Pod{st.pod}}, "api", st.at)
		if ch.empty() {
			t.Fatalf("%s: no change", st.name)
		}
		if got, want := seen(s["a"]), t0.Format(time.RFC3339Nano); got != want {
			t.Errorf("%s: seen = %q, want first-seen %q", st.name, got, want)
		}
	}
}

func TestApplyUpdateIsPure(t *testing.T) {
	cur := state(stored("a"), stored("b"))
	in := PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("a", withImage("x:2")), testPod("c")}}
	curCopy := state(stored("a"), stored("b"))
	inCopy := []*v1.Pod{testPod("a", withImage("x:2")), testPod("c")}

	next, _, _ := applyUpdate(cur, in, "api", t1)
	if !equality.Semantic.DeepEqual(cur, curCopy) {
		t.Error("applyUpdate modified the current state")
	}
	if !equality.Semantic.DeepEqual(in.Pods, inCopy) {
		t.Error("applyUpdate modified the input pods")
	}
	if next["c"] == in.Pods[1] {
		t.Error("applyUpdate stored the caller's pod instead of a copy")
	}
}

func TestPodUpdatesOrder(t *testing.T) {
	ch := changes{
		removes: []*v1.Pod{testPod("r")}, adds: []*v1.Pod{testPod("a")}, updates: []*v1.Pod{testPod("u")},
		deletes: []*v1.Pod{testPod("d")}, reconciles: []*v1.Pod{testPod("c")},
	}
	var got []Operation
	for _, u := range ch.podUpdates("file", false) {
		if u.Source != "file" || len(u.Pods) != 1 {
			t.Errorf("update %v: source %q, %d pods", u.Op, u.Source, len(u.Pods))
		}
		got = append(got, u.Op)
	}
	if want := []Operation{REMOVE, ADD, UPDATE, DELETE, RECONCILE}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}

	tests := []struct {
		name  string
		ch    changes
		first bool
		want  []Operation
	}{
		{"first input, nothing changed: empty ADD", changes{}, true, []Operation{ADD}},
		{"later input, nothing changed: nothing", changes{}, false, nil},
		{"first input with a remove only still gets no extra ADD", changes{removes: []*v1.Pod{testPod("r")}}, true, []Operation{REMOVE}},
		{"only non-empty operations", changes{updates: []*v1.Pod{testPod("u")}}, false, []Operation{UPDATE}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Operation
			for _, u := range tt.ch.podUpdates("file", tt.first) {
				got = append(got, u.Op)
				if u.Pods == nil {
					t.Error("nil Pods slice")
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ops = %v, want %v", got, tt.want)
			}
		})
	}
}
