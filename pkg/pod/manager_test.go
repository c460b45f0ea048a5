package pod

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testPod(uid, name, source string, mirror bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns",
		Annotations: map[string]string{ConfigSourceAnnotationKey: source}}}
	if mirror {
		p.Annotations[ConfigMirrorAnnotationKey] = "hash"
	}
	return p
}

func TestManagerLookups(t *testing.T) {
	static := testPod("s1", "web-node", FileSource, false)
	mirror := testPod("m1", "web-node", ApiserverSource, true)
	regular := testPod("r1", "api-pod", ApiserverSource, false)
	orphan := testPod("m2", "gone-node", ApiserverSource, true)

	m := NewManager()
	m.SetPods([]*v1.Pod{static, mirror, regular, orphan})

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"pods exclude mirrors", len(m.Pods()), 2},
		{"mirror count", len(m.MirrorPods()), 2},
		{"resolve mirror uid", m.ResolveUID("m1"), types.UID("s1")},
		{"resolve static uid unchanged", m.ResolveUID("s1"), types.UID("s1")},
		{"resolve orphan mirror unchanged", m.ResolveUID("m2"), types.UID("m2")},
		{"resolve unknown unchanged", m.ResolveUID("x"), types.UID("x")},
		{"orphans", len(m.OrphanedMirrorPods()), 1},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if uid, ok := m.MirrorUIDOf("s1"); !ok || uid != "m1" {
		t.Errorf("MirrorUIDOf(s1) = %q, %v", uid, ok)
	}
	if _, ok := m.MirrorUIDOf("r1"); ok {
		t.Errorf("regular pod has no mirror")
	}
	if p, ok := m.StaticPodOf(mirror); !ok || p.UID != "s1" {
		t.Errorf("StaticPodOf(mirror) = %v, %v", p, ok)
	}
	if p, ok := m.MirrorPodOf(static); !ok || p.UID != "m1" {
		t.Errorf("MirrorPodOf(static) = %v, %v", p, ok)
	}
	if p, ok := m.PodByFullName("api-pod", "ns"); !ok || p.UID != "r1" {
		t.Errorf("PodByFullName = %v, %v", p, ok)
	}
}

func TestManagerMirrorRecreatedUnderNewUID(t *testing.T) {
	m := NewManager()
	m.AddOrUpdatePod(testPod("s1", "web-node", FileSource, false))
	m.AddOrUpdatePod(testPod("m1", "web-node", ApiserverSource, true))
	m.AddOrUpdatePod(testPod("m2", "web-node", ApiserverSource, true))
	if _, ok := m.MirrorPodByUID("m1"); ok {
		t.Fatalf("stale mirror UID still resolves")
	}
	if uid, _ := m.MirrorUIDOf("s1"); uid != "m2" {
		t.Fatalf("MirrorUIDOf = %q, want m2", uid)
	}
	// Removing the stale one must not drop the current mirror.
	m.RemovePod(testPod("m1", "web-node", ApiserverSource, true))
	if uid, _ := m.MirrorUIDOf("s1"); uid != "m2" {
		t.Fatalf("after removing stale: MirrorUIDOf = %q, want m2", uid)
	}
}

func TestManagerRemove(t *testing.T) {
	m := NewManager()
	p := testPod("s1", "web-node", FileSource, false)
	m.AddOrUpdatePod(p)
	m.RemovePod(p)
	if _, ok := m.PodByUID("s1"); ok {
		t.Fatal("pod still present by UID")
	}
	if _, ok := m.PodByFullName("web-node", "ns"); ok {
		t.Fatal("pod still present by name")
	}
}

func TestIsStaticAndMirror(t *testing.T) {
	tests := []struct {
		pod            *v1.Pod
		static, mirror bool
	}{
		{testPod("a", "a", FileSource, false), true, false},
		{testPod("b", "b", HTTPSource, false), true, false},
		{testPod("c", "c", ApiserverSource, false), false, false},
		{testPod("d", "d", ApiserverSource, true), false, true},
		{&v1.Pod{}, false, false},
	}
	for i, tc := range tests {
		if got := IsStatic(tc.pod); got != tc.static {
			t.Errorf("%d: IsStatic = %v", i, got)
		}
		if got := IsMirror(tc.pod); got != tc.mirror {
			t.Errorf("%d: IsMirror = %v", i, got)
		}
	}
}

// TestManagerVersion: every change moves the version (it keys /pods' cache).
func TestManagerVersion(t *testing.T) {
	m := NewManager()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "ua"}}
	steps := []struct {
		name string
		do   func()
	}{
		{"add", func() { m.AddOrUpdatePod(p) }},
		{"update", func() { m.AddOrUpdatePod(p.DeepCopy()) }},
		{"remove", func() { m.RemovePod(p) }},
		{"set", func() { m.SetPods([]*v1.Pod{p}) }},
	}
	for _, s := range steps {
		before := m.Version()
		s.do()
		if m.Version() == before {
			t.Errorf("%s: version did not change", s.name)
		}
	}
}
