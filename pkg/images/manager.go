package images

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// Event reasons, as upstream.
const (
	EventImageGCFailed       = "ImageGCFailed"
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
)

// ErrLowThresholdNotReached is wrapped by the error of a pass that could not
// bring usage below the low threshold because too few images were eligible.
var ErrLowThresholdNotReached = errors.New("image garbage collection could not reach the low threshold")

// maxRounds bounds how often one pass re-plans from fresh figures when the
// removed images freed less than their sizes promised (shared layers). Every
// round removes at least one image or ends the pass, so this is only a guard.
const maxRounds = 32

// Config configures a Manager. Runtime is required; everything else has a
// working zero value.
type Config struct {
	Runtime Runtime
	// Policy is validated by NewManager.
	Policy Policy
	// Period of Run; 0 means DefaultPeriod.
	Period time.Duration
	// SandboxImage (e.g. registry.k8s.io/pause:3.10) is never removed.
	SandboxImage string
	// ImagesInUse, when set, returns images that pods about to start need
	// (image names from admitted pod specs); they are treated as in use.
	ImagesInUse func() []string
	// Statfs measures the filesystem; nil means Statfs.
	Statfs StatfsFunc
	// Recorder and NodeRef receive the ImageGCFailed / FreeDiskSpaceFailed
	// warning events; a nil Recorder records none.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Result is what one pass found and did.
type Result struct {
	// Before and After are the measured usage before and after the pass.
	Before, After FsUsage
	// Triggered is true when usage was at or above the high threshold.
	Triggered bool
	// Removed are the images removed, in removal order.
	Removed []ImageRecord
	// BytesFreed is the sum of the sizes of Removed, as the runtime sized them.
	BytesFreed uint64
	// Shortfall is how many bytes usage still is at or above the low threshold
	// after a triggered pass; 0 on success.
	Shortfall uint64
}

// Manager runs image garbage collection. Its bookkeeping (when each image
// was first seen and last used) lives in memory; passes are serialised.
type Manager struct {
	rt       Runtime
	policy   Policy
	period   time.Duration
	sandbox  string
	wanted   func() []string
	statfs   StatfsFunc
	recorder record.EventRecorder
	nodeRef  *v1.ObjectReference
	now      func() time.Time
	metrics  *metrics

	diskPressure atomic.Bool

	// passMu serialises passes; it guards records.
	passMu  sync.Mutex
	records map[string]usage
}

// NewManager validates the policy and returns a Manager. It refuses an
// invalid policy with a message naming the flags.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("image GC: no runtime")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		rt:       cfg.Runtime,
		policy:   cfg.Policy,
		period:   cfg.Period,
		sandbox:  cfg.SandboxImage,
		wanted:   cfg.ImagesInUse,
		statfs:   cfg.Statfs,
		recorder: cfg.Recorder,
		nodeRef:  cfg.NodeRef,
		now:      cfg.Now,
		records:  map[string]usage{},
	}
	if m.period <= 0 {
		m.period = DefaultPeriod
	}
	if m.statfs == nil {
		m.statfs = Statfs
	}
	if m.now == nil {
		m.now = time.Now
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	m.metrics = met
	return m, nil
}

// Run runs a pass now and then every Period until ctx is done. A failed pass
// is logged and reported as an ImageGCFailed event; the next one runs on time.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("image-gc")
	logger.Info("Starting image garbage collection", "period", m.period,
		"highThresholdPercent", m.policy.HighThresholdPercent, "lowThresholdPercent", m.policy.LowThresholdPercent,
		"minAge", m.policy.MinAge, "disabled", m.policy.Disabled())
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) {
		if _, err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Image garbage collection failed")
			m.event(EventImageGCFailed, err.Error())
		}
	}, m.period)
	logger.Info("Stopped image garbage collection")
	return nil
}

// DiskPressure reports whether the image filesystem was at or above the high
// threshold at the last measurement (before or after a pass).
func (m *Manager) DiskPressure() bool { return m.diskPressure.Load() }

// GarbageCollect runs one pass: measure, and when usage is at or above the
// high threshold remove unused images least recently used first until it is
// below the low threshold. Failing to get there returns an error wrapping
// ErrLowThresholdNotReached and records a FreeDiskSpaceFailed event. The
// Result is meaningful also with an error.
func (m *Manager) GarbageCollect(ctx context.Context) (res Result, err error) {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	logger := klog.FromContext(ctx).WithName("image-gc")
	start := time.Now()
	defer func() {
		m.metrics.duration.Observe(time.Since(start).Seconds())
		switch {
		case errors.Is(err, ErrLowThresholdNotReached):
			m.metrics.failures.WithLabelValues(failureLowNotReach).Inc()
		case err != nil:
			m.metrics.failures.WithLabelValues(failureError).Inc()
		}
	}()

	u, err := m.measure(ctx)
	if err != nil {
		return res, err
	}
	res.Before, res.After = u, u

	var errs []error
	stale := false // the last measurement failed: res.After is not current
	policy := m.policy
	for round := 0; round < maxRounds; round++ {
		now := m.now()
		d, err := m.detect(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		var records []ImageRecord
		m.records, records = observe(m.records, d, now)
		plan := PlanImageGC(u, records, policy, now)
		if round == 0 {
			res.Triggered = plan.Triggered
			if !plan.Triggered {
				logger.V(4).Info("Image filesystem below the high threshold", "mountpoint", u.Mountpoint,
					"usagePercent", fmt.Sprintf("%.1f", u.Percent()), "highThresholdPercent", m.policy.HighThresholdPercent)
				break
			}
			logger.Info("Image filesystem at or above the high threshold, removing unused images",
				"mountpoint", u.Mountpoint, "usedBytes", u.Used(), "capacityBytes", u.Capacity,
				"usagePercent", fmt.Sprintf("%.1f", u.Percent()), "highThresholdPercent", m.policy.HighThresholdPercent,
				"lowThresholdPercent", m.policy.LowThresholdPercent, "bytesToFree", plan.ToFree,
				"candidates", len(plan.Delete), "inUse", plan.InUse, "pinned", plan.Pinned, "tooYoung", plan.TooYoung)
		}
		if len(plan.Delete) == 0 {
			break
		}
		removed, rmErr := m.remove(ctx, plan.Delete, u.Mountpoint, policy.LowThresholdPercent)
		if rmErr != nil {
			errs = append(errs, rmErr)
		}
		res.Removed = append(res.Removed, removed...)
		for _, r := range removed {
			res.BytesFreed += r.Size
		}
		if u, err = m.measure(ctx); err != nil {
			errs = append(errs, err)
			stale = true
			break
		}
		res.After = u
		if len(removed) == 0 || !u.AtOrAbove(policy.LowThresholdPercent) {
			break
		}
		// Still at or above the low threshold: the runtime's sizes overstated
		// what removal frees (shared layers). Continue towards the low
		// threshold with fresh figures.
		policy.HighThresholdPercent = policy.LowThresholdPercent
	}

	if res.Triggered && !stale {
		if res.After.AtOrAbove(m.policy.LowThresholdPercent) {
			res.Shortfall = res.After.Used() - thresholdBytes(res.After.Capacity, m.policy.LowThresholdPercent) + 1
		}
		logger.Info("Image garbage collection pass done", "removed", len(res.Removed), "bytesFreed", res.BytesFreed,
			"usagePercentBefore", fmt.Sprintf("%.1f", res.Before.Percent()), "usagePercentAfter", fmt.Sprintf("%.1f", res.After.Percent()),
			"shortfallBytes", res.Shortfall, "duration", time.Since(start))
	}
	if res.Shortfall > 0 {
		err := fmt.Errorf("%w: image filesystem %s is at %.1f%% after removing %d images (%d bytes), %d bytes above the low threshold of %d%%; the remaining images are in use, pinned or younger than %s",
			ErrLowThresholdNotReached, res.After.Mountpoint, res.After.Percent(), len(res.Removed), res.BytesFreed,
			res.Shortfall, m.policy.LowThresholdPercent, m.policy.MinAge)
		m.event(EventFreeDiskSpaceFailed, err.Error())
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// measure reads the image filesystem usage and updates DiskPressure and the
// usage gauges.
func (m *Manager) measure(ctx context.Context) (FsUsage, error) {
	u, err := ImageFsUsage(ctx, m.rt, m.statfs)
	if err != nil {
		return u, err
	}
	m.diskPressure.Store(u.AtOrAbove(m.policy.HighThresholdPercent))
	m.metrics.fsUsed.Set(float64(u.Used()))
	m.metrics.fsCapacity.Set(float64(u.Capacity))
	return u, nil
}

// detect lists images and containers (all states) and works out which images
// are in use and pinned.
func (m *Manager) detect(ctx context.Context) (detection, error) {
	imgs, err := m.rt.ListImages(ctx, nil)
	if err != nil {
		return detection{}, fmt.Errorf("image GC: listing images: %w", err)
	}
	ctrs, err := m.rt.ListContainers(ctx, nil)
	if err != nil {
		return detection{}, fmt.Errorf("image GC: listing containers: %w", err)
	}
	var wanted []string
	if m.wanted != nil {
		wanted = m.wanted()
	}
	return detect(imgs, ctrs, wanted, m.sandbox), nil
}

// remove removes the planned images in order. Just before, it looks at the
// runtime again and skips any image that became used since the plan was made
// (a container created meanwhile). After each removal it measures the
// filesystem and stops once usage is below lowPercent: the runtime's image
// sizes are an estimate (containerd keeps a layer both as a blob and
// unpacked), the filesystem's figures are not. It continues past errors.
func (m *Manager) remove(ctx context.Context, planned []ImageRecord, mountpoint string, lowPercent int) ([]ImageRecord, error) {
	logger := klog.FromContext(ctx).WithName("image-gc")
	d, err := m.detect(ctx)
	if err != nil {
		return nil, err
	}
	var removed []ImageRecord
	var errs []error
	for _, img := range planned {
		if d.inUse[img.ID] || d.pinned[img.ID] {
			logger.Info("Not removing image: in use since the plan was made", "image", img.ID)
			continue
		}
		gone, err := m.removeOne(ctx, img.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		delete(m.records, img.ID)
		if gone {
			logger.V(2).Info("Image already gone", "image", img.ID)
			continue
		}
		logger.Info("Removed image", "image", img.ID, "tags", tagsOf(d.images, img.ID), "sizeBytes", img.Size,
			"lastUsed", img.LastUsed, "firstSeen", img.FirstSeen)
		m.metrics.imagesRemoved.Inc()
		m.metrics.bytesFreed.Add(float64(img.Size))
		removed = append(removed, img)
		if c, a, err := m.statfs(mountpoint); err == nil && !(FsUsage{Capacity: c, Available: min(a, c)}).AtOrAbove(lowPercent) {
			break
		}
	}
	return removed, errors.Join(errs...)
}

// removeOne removes one image; gone reports that it did not exist anymore.
func (m *Manager) removeOne(ctx context.Context, id string) (gone bool, err error) {
	err = m.rt.RemoveImage(ctx, id)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, cri.ErrNotFound):
		return true, nil
	default:
		return false, fmt.Errorf("image GC: removing image %s: %w", id, err)
	}
}

func (m *Manager) event(reason, msg string) {
	if m.recorder == nil || m.nodeRef == nil {
		return
	}
	m.recorder.Event(m.nodeRef, v1.EventTypeWarning, reason, msg)
}

func tagsOf(images []*runtimeapi.Image, id string) []string {
	for _, img := range images {
		if img.GetId() == id {
			return img.GetRepoTags()
		}
	}
	return nil
}
