package cristatus

import (
	"fmt"
	"reflect"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// idleListing is what an idle node lists: n pods of one sandbox and one
// running container each, plus an entry without kubelet identity.
func idleListing(n int) *cri.PodState {
	s := &cri.PodState{}
	for i := range n {
		pod := fmt.Sprintf("p%03d", i)
		s.Sandboxes = append(s.Sandboxes, sandboxOf("sb-"+pod, pod, 0, int64(1000-i), true, true))
		s.Containers = append(s.Containers, ctrOf("c-"+pod, "sb-"+pod, pod, "c", 0, int64(1000-i), running))
	}
	s.Containers = append(s.Containers, &runtimeapi.Container{Id: "foreign", Labels: map[string]string{"app": "other"}})
	return s
}

// relisted is s listed again: the same decoded entries (cri.Client's list
// cache hands out the same messages for unchanged entries) in new slices.
func relisted(s *cri.PodState) *cri.PodState {
	return &cri.PodState{Sandboxes: append([]*runtimeapi.PodSandbox(nil), s.Sandboxes...),
		Containers: append([]*runtimeapi.Container(nil), s.Containers...)}
}

func TestPodsCacheConvertsNothingUnchanged(t *testing.T) {
	var c PodsCache
	s := idleListing(110)
	first := c.Pods(s)
	entries, pods := c.Stats()
	if entries != 221 || pods != 110 {
		t.Fatalf("first listing converted %d entries into %d pods, want 221 into 110", entries, pods)
	}
	again := c.Pods(relisted(s))
	if e, p := c.Stats(); e != entries || p != pods {
		t.Errorf("an unchanged listing converted %d entries and built %d pods, want none", e-entries, p-pods)
	}
	if len(again) != len(first) || &again[0] != &first[0] {
		t.Errorf("an unchanged listing returned new pods")
	}
}

func TestPodsCacheConvertsOnlyChangedEntries(t *testing.T) {
	var c PodsCache
	s := idleListing(110)
	first := c.Pods(s)
	entries, pods := c.Stats()

	// One container exited (a new message for its entry), one pod appeared,
	// one was removed.
	next := relisted(s)
	next.Containers[5] = ctrOf("c-p005", "sb-p005", "p005", "c", 0, 995, exited)
	next.Sandboxes = append(next.Sandboxes[:7], next.Sandboxes[8:]...)
	next.Containers = append(next.Containers[:7], next.Containers[8:]...)
	next.Sandboxes = append(next.Sandboxes, sandboxOf("sb-new", "new", 0, 2000, true, true))
	got := c.Pods(next)
	if e, p := c.Stats(); e-entries != 2 || p-pods != 2 {
		t.Errorf("converted %d entries into %d pods, want 2 (the changed container, the new sandbox) into 2", e-entries, p-pods)
	}
	if want := Pods(next); !reflect.DeepEqual(got, want) {
		t.Errorf("cached conversion differs from Pods:\n got %+v\nwant %+v", got, want)
	}
	byName := map[string]*runtime.Pod{}
	for _, p := range first {
		byName[p.Name] = p
	}
	for _, p := range got {
		switch p.Name {
		case "p005", "new":
			if p == byName[p.Name] {
				t.Errorf("pod %s changed but the previous pod was returned", p.Name)
			}
		default:
			if p != byName[p.Name] {
				t.Errorf("pod %s unchanged but built anew", p.Name)
			}
		}
	}
}

// TestPodsCacheMatchesPods checks the cache against a fresh conversion over
// a sequence of listings that reuse, replace, reorder and drop entries.
func TestPodsCacheMatchesPods(t *testing.T) {
	a := sandboxOf("sb-a", "a", 0, 100, true, false)
	a.Annotations["kubernetes.io/config.source"] = "file"
	a2 := sandboxOf("sb-a2", "a", 1, 200, true, false)
	b := sandboxOf("sb-b", "b", 0, 150, false, true)
	foreign := &runtimeapi.PodSandbox{Id: "foreign", Labels: map[string]string{"x": "y"}}
	ca := ctrOf("ca", "sb-a", "a", "c", 0, 110, running)
	ca2 := ctrOf("ca2", "sb-a2", "a", "c", 1, 210, running)
	cb := ctrOf("cb", "sb-b", "b", "c", 0, 160, exited)
	orphan := ctrOf("co", "sb-gone", "o", "c", 0, 50, exited)
	listings := []*cri.PodState{
		{},
		{Sandboxes: []*runtimeapi.PodSandbox{a, b, foreign}, Containers: []*runtimeapi.Container{ca, cb}},
		{Sandboxes: []*runtimeapi.PodSandbox{a, b, foreign}, Containers: []*runtimeapi.Container{ca, cb}},
		{Sandboxes: []*runtimeapi.PodSandbox{a2, a, b}, Containers: []*runtimeapi.Container{ca2, ca, cb, orphan}},
		{Sandboxes: []*runtimeapi.PodSandbox{b, a2}, Containers: []*runtimeapi.Container{cb, ca2, orphan}},
		{Sandboxes: []*runtimeapi.PodSandbox{a2}, Containers: []*runtimeapi.Container{orphan, ca2}},
		{Containers: []*runtimeapi.Container{orphan}},
		{},
	}
	var c PodsCache
	for i, s := range listings {
		got, want := c.Pods(relisted(s)), Pods(s)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("listing %d: got %+v, want %+v", i, got, want)
		}
	}
}

// BenchmarkPodsCacheUnchanged is the relist of an idle node with 110 pods.
func BenchmarkPodsCacheUnchanged(b *testing.B) {
	var c PodsCache
	s := idleListing(110)
	c.Pods(s)
	b.ReportAllocs()
	for b.Loop() {
		c.Pods(relisted(s))
	}
}

// BenchmarkPodsUncached is the same listing converted from scratch, as each
// relist did before the cache.
func BenchmarkPodsUncached(b *testing.B) {
	s := idleListing(110)
	b.ReportAllocs()
	for b.Loop() {
		Pods(relisted(s))
	}
}
