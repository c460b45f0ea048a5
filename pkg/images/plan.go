package images

import (
	"cmp"
	"slices"
	"time"
)

// FsUsage is the state of the image filesystem, in bytes.
type FsUsage struct {
	// Capacity and Available are the filesystem's own figures (statfs):
	// Available is what an unprivileged writer can still use.
	Capacity  uint64
	Available uint64
	// ImagesBytes is what the runtime reports images use (CRI ImageFsInfo
	// UsedBytes); informational, the policy works on Capacity - Available.
	ImagesBytes uint64
	// Mountpoint is the directory the runtime reported for its images.
	Mountpoint string
}

// Used is Capacity - Available.
func (u FsUsage) Used() uint64 {
	if u.Available >= u.Capacity {
		return 0
	}
	return u.Capacity - u.Available
}

// Percent is the used share of the capacity, in percent (0 for an empty or
// unknown filesystem).
func (u FsUsage) Percent() float64 {
	if u.Capacity == 0 {
		return 0
	}
	return float64(u.Used()) * 100 / float64(u.Capacity)
}

// AtOrAbove reports whether usage is at or above percent % of the capacity.
func (u FsUsage) AtOrAbove(percent int) bool {
	return u.Capacity > 0 && u.Used() >= thresholdBytes(u.Capacity, percent)
}

// thresholdBytes is percent % of capacity, rounded down.
func thresholdBytes(capacity uint64, percent int) uint64 {
	if percent <= 0 {
		return 0
	}
	// capacity * percent / 100 without overflowing for huge capacities.
	return capacity/100*uint64(percent) + capacity%100*uint64(percent)/100
}

// ImageRecord is what the policy knows about one image.
type ImageRecord struct {
	ID   string
	Size uint64
	// FirstSeen is when nodelet first saw the image.
	FirstSeen time.Time
	// LastUsed is the last time a container of the image existed; zero if
	// never seen in use.
	LastUsed time.Time
	// Pinned images are never removed (the sandbox image, runtime-pinned).
	Pinned bool
	// InUse images are used by a container that exists (any state) or needed
	// by a pod that is about to start; never removed.
	InUse bool
}

// Plan is the outcome of PlanImageGC.
type Plan struct {
	// Triggered is true when usage was at or above the high threshold.
	Triggered bool
	// ToFree is how many bytes must go to bring usage below the low
	// threshold (0 when not triggered).
	ToFree uint64
	// Delete lists the images to remove, in order (least recently used first).
	Delete []ImageRecord
	// Freeing is the sum of the sizes of Delete.
	Freeing uint64
	// Shortfall is ToFree - Freeing when the eligible images are not enough.
	Shortfall uint64
	// Kept counts the images that could not be removed, by reason.
	InUse, Pinned, TooYoung int
}

// PlanImageGC decides which images to remove. Nothing is removed unless usage
// is at or above the high threshold; then unused images are removed least
// recently used first (ties: first seen earlier, then ID) until the sizes of
// the removed images bring usage below the low threshold. Images in use,
// pinned images and images first seen less than MinAge before now are never
// chosen. A disabled policy (high threshold 100) plans nothing.
func PlanImageGC(usage FsUsage, images []ImageRecord, policy Policy, now time.Time) Plan {
	var plan Plan
	if policy.Disabled() || !usage.AtOrAbove(policy.HighThresholdPercent) {
		return plan
	}
	plan.Triggered = true
	// Aim strictly below the low threshold: used - ToFree < low.
	low := thresholdBytes(usage.Capacity, policy.LowThresholdPercent)
	if used := usage.Used(); used >= low {
		plan.ToFree = used - low + 1
	}
	if plan.ToFree == 0 {
		return plan
	}

	candidates := make([]ImageRecord, 0, len(images))
	for _, img := range images {
		switch {
		case img.InUse:
			plan.InUse++
		case img.Pinned:
			plan.Pinned++
		case now.Sub(img.FirstSeen) < policy.MinAge:
			plan.TooYoung++
		default:
			candidates = append(candidates, img)
		}
	}
	slices.SortFunc(candidates, lruOrder)

	for _, img := range candidates {
		if plan.Freeing >= plan.ToFree {
			break
		}
		plan.Delete = append(plan.Delete, img)
		plan.Freeing += img.Size
	}
	if plan.Freeing < plan.ToFree {
		plan.Shortfall = plan.ToFree - plan.Freeing
	}
	return plan
}

// lruOrder orders least recently used first; ties by first seen, then ID.
func lruOrder(a, b ImageRecord) int {
	if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
		return c
	}
	if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
