package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestCacheVersion: only real changes move the version, so /pods re-renders
// only when something it shows changed.
func TestCacheVersion(t *testing.T) {
	c := NewCache()
	running := v1.PodStatus{Phase: v1.PodRunning}
	steps := []struct {
		name    string
		do      func()
		changed bool
	}{
		{"add", func() { c.Set("a", running) }, true},
		{"same status again", func() { c.Set("a", v1.PodStatus{Phase: v1.PodRunning}) }, false},
		{"changed status", func() { c.Set("a", v1.PodStatus{Phase: v1.PodFailed}) }, true},
		{"delete", func() { c.Delete("a") }, true},
		{"delete absent", func() { c.Delete(types.UID("a")) }, false},
	}
	for _, s := range steps {
		before := c.Version()
		s.do()
		if got := c.Version() != before; got != s.changed {
			t.Errorf("%s: version changed = %v, want %v", s.name, got, s.changed)
		}
	}
}
