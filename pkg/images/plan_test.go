package images

import (
	"slices"
	"testing"
	"time"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

func TestPlanImageGC(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	old := ago(time.Hour)
	policy := Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	// 100 GiB filesystem, 95 GiB used: 15 GiB + 1 byte must go to be under 80 %.
	full := FsUsage{Capacity: 100 * gib, Available: 5 * gib}

	tests := []struct {
		name       string
		usage      FsUsage
		images     []ImageRecord
		policy     Policy
		wantDelete []string
		wantToFree uint64
		wantShort  uint64
		triggered  bool
	}{
		{
			name:   "below high threshold: nothing",
			usage:  FsUsage{Capacity: 100 * gib, Available: 11 * gib}, // 89 %
			images: []ImageRecord{{ID: "a", Size: 50 * gib, FirstSeen: old}},
			policy: policy,
		},
		{
			name:       "exactly at high threshold triggers",
			usage:      FsUsage{Capacity: 100 * gib, Available: 10 * gib},
			images:     []ImageRecord{{ID: "a", Size: 20 * gib, FirstSeen: old}},
			policy:     policy,
			triggered:  true,
			wantToFree: 10*gib + 1,
			wantDelete: []string{"a"},
		},
		{
			name:  "least recently used first, stop when enough",
			usage: full,
			images: []ImageRecord{
				{ID: "recent", Size: 10 * gib, FirstSeen: old, LastUsed: ago(time.Minute)},
				{ID: "oldest", Size: 10 * gib, FirstSeen: old, LastUsed: ago(50 * time.Minute)},
				{ID: "middle", Size: 10 * gib, FirstSeen: old, LastUsed: ago(30 * time.Minute)},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantDelete: []string{"oldest", "middle"},
		},
		{
			name:  "never used goes before used",
			usage: full,
			images: []ImageRecord{
				{ID: "used", Size: 20 * gib, FirstSeen: old, LastUsed: ago(50 * time.Minute)},
				{ID: "never", Size: 20 * gib, FirstSeen: old},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantDelete: []string{"never"},
		},
		{
			name:  "ties on last used: first seen earlier first, then ID",
			usage: FsUsage{Capacity: 100 * gib, Available: 10 * gib}, // needs 10 GiB + 1
			images: []ImageRecord{
				{ID: "c", Size: 4 * gib, FirstSeen: ago(2 * time.Hour)},
				{ID: "b", Size: 4 * gib, FirstSeen: ago(3 * time.Hour)},
				{ID: "a", Size: 4 * gib, FirstSeen: ago(2 * time.Hour)},
				{ID: "z", Size: 4 * gib, FirstSeen: ago(time.Hour)},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 10*gib + 1,
			wantDelete: []string{"b", "a", "c"},
		},
		{
			name:  "in use never removed",
			usage: full,
			images: []ImageRecord{
				{ID: "running", Size: 50 * gib, FirstSeen: old, InUse: true},
				{ID: "small", Size: 1 * gib, FirstSeen: old},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantDelete: []string{"small"},
			wantShort:  14*gib + 1,
		},
		{
			name:  "pinned never removed",
			usage: full,
			images: []ImageRecord{
				{ID: "pause", Size: 50 * gib, FirstSeen: old, Pinned: true},
				{ID: "x", Size: 20 * gib, FirstSeen: old},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantDelete: []string{"x"},
		},
		{
			name:  "younger than min age protected, exactly min age eligible",
			usage: full,
			images: []ImageRecord{
				{ID: "fresh", Size: 50 * gib, FirstSeen: ago(time.Minute)},
				{ID: "edge", Size: 20 * gib, FirstSeen: ago(2 * time.Minute)},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantDelete: []string{"edge"},
		},
		{
			name:       "min age 0: fresh image eligible",
			usage:      full,
			images:     []ImageRecord{{ID: "fresh", Size: 50 * gib, FirstSeen: now}},
			policy:     Policy{HighThresholdPercent: 90, LowThresholdPercent: 80},
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantDelete: []string{"fresh"},
		},
		{
			name:  "nothing eligible: shortfall is everything",
			usage: full,
			images: []ImageRecord{
				{ID: "a", Size: 50 * gib, FirstSeen: old, InUse: true},
				{ID: "b", Size: 50 * gib, FirstSeen: old, Pinned: true},
				{ID: "c", Size: 50 * gib, FirstSeen: now},
			},
			policy:     policy,
			triggered:  true,
			wantToFree: 15*gib + 1,
			wantShort:  15*gib + 1,
		},
		{
			name:       "disabled policy (high 100) plans nothing even when full",
			usage:      FsUsage{Capacity: 100 * gib, Available: 0},
			images:     []ImageRecord{{ID: "a", Size: 50 * gib, FirstSeen: old}},
			policy:     Policy{HighThresholdPercent: 100, LowThresholdPercent: 80},
			wantDelete: nil,
		},
		{
			name:       "low 0: free everything eligible",
			usage:      FsUsage{Capacity: 10 * gib, Available: 5 * gib},
			images:     []ImageRecord{{ID: "a", Size: 2 * gib, FirstSeen: old}, {ID: "b", Size: 2 * gib, FirstSeen: old, LastUsed: ago(time.Minute)}},
			policy:     Policy{HighThresholdPercent: 50, LowThresholdPercent: 0},
			triggered:  true,
			wantToFree: 5*gib + 1,
			wantDelete: []string{"a", "b"},
			wantShort:  1*gib + 1,
		},
		{
			name:   "zero capacity: nothing",
			usage:  FsUsage{},
			images: []ImageRecord{{ID: "a", Size: 1, FirstSeen: old}},
			policy: policy,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := PlanImageGC(tc.usage, tc.images, tc.policy, now)
			var got []string
			for _, img := range plan.Delete {
				got = append(got, img.ID)
			}
			if !slices.Equal(got, tc.wantDelete) {
				t.Errorf("Delete = %v, want %v", got, tc.wantDelete)
			}
			if plan.Triggered != tc.triggered {
				t.Errorf("Triggered = %v, want %v", plan.Triggered, tc.triggered)
			}
			if plan.ToFree != tc.wantToFree {
				t.Errorf("ToFree = %d, want %d", plan.ToFree, tc.wantToFree)
			}
			if plan.Shortfall != tc.wantShort {
				t.Errorf("Shortfall = %d, want %d", plan.Shortfall, tc.wantShort)
			}
			var sum uint64
			for _, img := range plan.Delete {
				sum += img.Size
			}
			if plan.Freeing != sum {
				t.Errorf("Freeing = %d, want sum of sizes %d", plan.Freeing, sum)
			}
			if plan.Shortfall == 0 && plan.Triggered && tc.usage.Used()-min(plan.Freeing, tc.usage.Used()) >= thresholdBytes(tc.usage.Capacity, tc.policy.LowThresholdPercent) && tc.policy.LowThresholdPercent > 0 {
				t.Errorf("plan without shortfall does not get below the low threshold")
			}
		})
	}
}

func TestPlanImageGCDeterministic(t *testing.T) {
	now := time.Now()
	var imgs []ImageRecord
	for _, id := range []string{"e", "d", "c", "b", "a"} {
		imgs = append(imgs, ImageRecord{ID: id, Size: mib, FirstSeen: now.Add(-time.Hour)})
	}
	usage := FsUsage{Capacity: 10 * mib, Available: 0}
	want := PlanImageGC(usage, imgs, DefaultPolicy(), now)
	for i := 0; i < 20; i++ {
		shuffled := slices.Clone(imgs)
		slices.Reverse(shuffled)
		if i%2 == 0 {
			shuffled[0], shuffled[3] = shuffled[3], shuffled[0]
		}
		got := PlanImageGC(usage, shuffled, DefaultPolicy(), now)
		if !slices.EqualFunc(got.Delete, want.Delete, func(a, b ImageRecord) bool { return a.ID == b.ID }) {
			t.Fatalf("order depends on input order: %v vs %v", got.Delete, want.Delete)
		}
	}
	if got := want.Delete[0].ID; got != "a" {
		t.Errorf("first = %s, want a (ID breaks ties)", got)
	}
}

func TestFsUsage(t *testing.T) {
	tests := []struct {
		u       FsUsage
		used    uint64
		percent float64
		at90    bool
	}{
		{FsUsage{Capacity: 100, Available: 10}, 90, 90, true},
		{FsUsage{Capacity: 100, Available: 11}, 89, 89, false},
		{FsUsage{Capacity: 100, Available: 200}, 0, 0, false},
		{FsUsage{}, 0, 0, false},
		{FsUsage{Capacity: 1 << 62, Available: 0}, 1 << 62, 100, true},
	}
	for _, tc := range tests {
		if got := tc.u.Used(); got != tc.used {
			t.Errorf("%+v Used = %d, want %d", tc.u, got, tc.used)
		}
		if got := tc.u.Percent(); got != tc.percent {
			t.Errorf("%+v Percent = %v, want %v", tc.u, got, tc.percent)
		}
		if got := tc.u.AtOrAbove(90); got != tc.at90 {
			t.Errorf("%+v AtOrAbove(90) = %v, want %v", tc.u, got, tc.at90)
		}
	}
	if got := thresholdBytes(1<<62, 80); got != (1<<62)/100*80+(1<<62)%100*80/100 {
		t.Errorf("thresholdBytes overflowed: %d", got)
	}
}
