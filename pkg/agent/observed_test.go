package agent

import (
	"testing"
	"time"

	"github.com/nodelet/nodelet/pkg/worker"
)

func TestSkipRelisted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	started := "s:sb=ready;c:c1=running;"
	exited := "s:sb=ready;c:c1=exited;"
	inSync := observation{fingerprint: started, at: t0, inSync: true}
	tests := []struct {
		name  string
		r     *worker.Relisted
		obs   observation
		known bool
		want  bool
	}{
		{"not from the relister", nil, inSync, true, false},
		{"worker never read the pod", &worker.Relisted{Fingerprint: started, At: t0.Add(time.Second)}, observation{}, false, false},
		{"relist shows what the worker started", &worker.Relisted{Fingerprint: started, At: t0.Add(time.Second)}, inSync, true, true},
		{"container exited since", &worker.Relisted{Fingerprint: exited, At: t0.Add(time.Second)}, inSync, true, false},
		{"listing taken mid-sync, before the read", &worker.Relisted{Fingerprint: "s:sb=ready;", At: t0.Add(-time.Millisecond)}, inSync, true, true},
		{"same state, but the read left work", &worker.Relisted{Fingerprint: exited, At: t0.Add(time.Second)},
			observation{fingerprint: exited, at: t0}, true, false},
		{"older listing, but the read left work", &worker.Relisted{Fingerprint: "s:sb=ready;", At: t0.Add(-time.Millisecond)},
			observation{fingerprint: exited, at: t0}, true, false},
		{"listing completed as the read began", &worker.Relisted{Fingerprint: exited, At: t0}, inSync, true, false},
	}
	for _, tc := range tests {
		if got := skipRelisted(tc.r, tc.obs, tc.known); got != tc.want {
			t.Errorf("%s: skip = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSkipPeriodic(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	running := "s:sb=ready;c:c1=running;"
	inSync := observation{fingerprint: running, at: t0, inSync: true}
	later := listedState{fingerprint: running, began: t0.Add(time.Second), ok: true}
	tests := []struct {
		name  string
		obs   observation
		known bool
		l     listedState
		want  bool
	}{
		{"unchanged since the last sync", inSync, true, later, true},
		{"worker never read the pod", observation{}, false, later, false},
		{"last sync left work", observation{fingerprint: running, at: t0}, true, later, false},
		{"state changed", inSync, true, listedState{fingerprint: "s:sb=ready;c:c1=exited;", began: t0.Add(time.Second), ok: true}, false},
		{"listing began before the read", inSync, true, listedState{fingerprint: running, began: t0.Add(-time.Second), ok: true}, false},
		{"listing began as the read did", inSync, true, listedState{fingerprint: running, began: t0, ok: true}, false},
		{"pod not in the listing", inSync, true, listedState{began: t0.Add(time.Second)}, false},
	}
	for _, tc := range tests {
		if got := skipPeriodic(tc.obs, tc.known, tc.l); got != tc.want {
			t.Errorf("%s: skip = %v, want %v", tc.name, got, tc.want)
		}
	}
}
