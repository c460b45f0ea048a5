package images

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(5 * time.Minute)
	imgs := func(ids ...string) []*runtimeapi.Image {
		var out []*runtimeapi.Image
		for _, id := range ids {
			out = append(out, &runtimeapi.Image{Id: id, Size: 7})
		}
		return out
	}
	state, recs := observe(nil, detection{images: imgs("a", "b"), inUse: map[string]bool{"a": true}}, t0)
	if len(recs) != 2 || recs[0].FirstSeen != t0 || recs[0].LastUsed != t0 || !recs[0].InUse || recs[1].LastUsed != (time.Time{}) || recs[1].Size != 7 {
		t.Fatalf("first observe: %+v", recs)
	}
	// a no longer used, b used now, c new, nothing forgotten yet.
	state, recs = observe(state, detection{images: imgs("a", "b", "c"), inUse: map[string]bool{"b": true}, pinned: map[string]bool{"c": true}}, t1)
	want := []ImageRecord{
		{ID: "a", Size: 7, FirstSeen: t0, LastUsed: t0},
		{ID: "b", Size: 7, FirstSeen: t0, LastUsed: t1, InUse: true},
		{ID: "c", Size: 7, FirstSeen: t1, Pinned: true},
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, recs[i], want[i])
		}
	}
	// b is gone: forgotten; if it comes back it is new again.
	state, _ = observe(state, detection{images: imgs("a", "c")}, t1)
	if _, ok := state["b"]; ok {
		t.Errorf("gone image still tracked")
	}
	_, recs = observe(state, detection{images: imgs("b")}, t1.Add(time.Minute))
	if recs[0].FirstSeen != t1.Add(time.Minute) || !recs[0].LastUsed.IsZero() {
		t.Errorf("returning image: %+v", recs[0])
	}
}
