package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/volumes/cleanup"
)

// Config configures a ContainerGC. Runtime is required.
type Config struct {
	Runtime Runtime
	// Policy is validated by New.
	Policy Policy
	// PodLogsDir (e.g. /var/log/pods), when set, has the directories of
	// removed pods deleted once nothing of the pod is left, and bounds which
	// container log files are deleted with their container.
	PodLogsDir string
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Result is what one pass removed.
type Result struct {
	Containers []Container
	Sandboxes  []Sandbox
	// LogDirs are the pod log directories deleted (names under PodLogsDir).
	LogDirs []string
}

// ContainerGC removes dead containers and sandboxes. Passes are serialised.
type ContainerGC struct {
	rt         Runtime
	policy     Policy
	podLogsDir string
	now        func() time.Time
	metrics    *metrics
	passMu     sync.Mutex
}

// New validates the policy and returns a ContainerGC.
func New(cfg Config) (*ContainerGC, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("container GC: no runtime")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	g := &ContainerGC{rt: cfg.Runtime, policy: cfg.Policy, podLogsDir: cfg.PodLogsDir, now: cfg.Now}
	if g.now == nil {
		g.now = time.Now
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	g.metrics = met
	return g, nil
}

// GarbageCollect runs one pass. podWanted reports whether a pod UID is still
// wanted on the node (known and not finished with); pass nil until all pod
// sources are ready, so that no pod is taken for removed. It continues past
// individual failures and returns them joined.
func (g *ContainerGC) GarbageCollect(ctx context.Context, podWanted func(types.UID) bool) (res Result, err error) {
	g.passMu.Lock()
	defer g.passMu.Unlock()
	logger := klog.FromContext(ctx).WithName("container-gc")
	start := time.Now()
	defer func() {
		g.metrics.duration.Observe(time.Since(start).Seconds())
		if err != nil {
			g.metrics.failures.Inc()
		}
	}()

	containers, sandboxes, err := g.list(ctx)
	if err != nil {
		return res, err
	}
	now := g.now()
	if g.policy.MinAge > 0 {
		g.fillFinishedAt(ctx, containers, now)
	}
	plan := PlanContainerGC(containers, sandboxes, podWanted, g.policy, now)

	var errs []error
	failed := map[types.UID]bool{} // pods with something we failed to remove
	for _, c := range plan.Containers {
		if err := g.removeContainer(ctx, c); err != nil {
			errs = append(errs, err)
			failed[c.PodUID] = true
			continue
		}
		logger.V(2).Info("Removed dead container", "podUID", c.PodUID, "container", c.Name, "attempt", c.Attempt, "containerID", c.ID)
		g.metrics.containersRemoved.Inc()
		res.Containers = append(res.Containers, c)
	}
	for _, s := range plan.Sandboxes {
		if failed[s.PodUID] {
			continue // it may still hold the container we failed to remove
		}
		if err := g.removeSandbox(ctx, s); err != nil {
			errs = append(errs, err)
			failed[s.PodUID] = true
			continue
		}
		logger.V(2).Info("Removed sandbox", "podUID", s.PodUID, "sandboxID", s.ID, "attempt", s.Attempt)
		g.metrics.sandboxesRemoved.Inc()
		res.Sandboxes = append(res.Sandboxes, s)
	}

	if g.podLogsDir != "" && podWanted != nil {
		dirs, err := g.removeLogDirs(ctx, containers, sandboxes, res, failed, podWanted)
		res.LogDirs = dirs
		if err != nil {
			errs = append(errs, err)
		}
	}

	if len(res.Containers)+len(res.Sandboxes)+len(res.LogDirs) > 0 || len(errs) > 0 {
		logger.Info("Container garbage collection pass", "containersRemoved", len(res.Containers),
			"sandboxesRemoved", len(res.Sandboxes), "podLogDirsRemoved", len(res.LogDirs),
			"containerIDs", containerIDs(res.Containers), "errors", len(errs), "duration", time.Since(start))
	}
	return res, errors.Join(errs...)
}

func (g *ContainerGC) list(ctx context.Context) ([]Container, []Sandbox, error) {
	cs, err := g.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("container GC: listing containers: %w", err)
	}
	ss, err := g.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("container GC: listing sandboxes: %w", err)
	}
	var containers []Container
	for _, c := range cs {
		if cc, ok := fromCRIContainer(c); ok {
			containers = append(containers, cc)
		}
	}
	var sandboxes []Sandbox
	for _, s := range ss {
		if sb, ok := fromCRISandbox(s); ok {
			sandboxes = append(sandboxes, sb)
		}
	}
	return containers, sandboxes, nil
}

// fillFinishedAt asks the runtime when dead containers old enough by
// creation finished, so MinAge counts from the end. A container whose status
// cannot be read counts as just finished.
func (g *ContainerGC) fillFinishedAt(ctx context.Context, containers []Container, now time.Time) {
	for i := range containers {
		c := &containers[i]
		if !c.Dead() || now.Sub(c.CreatedAt) < g.policy.MinAge {
			continue
		}
		st, err := g.rt.ContainerStatus(ctx, c.ID, false)
		switch {
		case err != nil:
			c.FinishedAt = now
		case st.GetFinishedAt() > 0:
			c.FinishedAt = time.Unix(0, st.GetFinishedAt())
		}
	}
}

// removeContainer stops a container in an unknown state (it may still run),
// removes it, and deletes its log file and rotated logs.
func (g *ContainerGC) removeContainer(ctx context.Context, c Container) error {
	var logPath string
	if st, err := g.rt.ContainerStatus(ctx, c.ID, false); err == nil {
		logPath = st.GetLogPath()
	} else if errors.Is(err, cri.ErrNotFound) {
		return nil
	}
	if c.State == runtime.ContainerStateUnknown {
		if err := g.rt.StopContainer(ctx, c.ID, 0); err != nil && !errors.Is(err, cri.ErrNotFound) {
			return fmt.Errorf("container GC: stopping container %s (pod %s, %s) in unknown state: %w", c.ID, c.PodUID, c.Name, err)
		}
	}
	if err := g.rt.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
		return fmt.Errorf("container GC: removing container %s (pod %s, %s): %w", c.ID, c.PodUID, c.Name, err)
	}
	return g.removeContainerLogs(logPath)
}

// removeContainerLogs deletes a container's log file and its rotated files
// (<path>.<suffix>). Only absolute paths, and only under PodLogsDir when set.
func (g *ContainerGC) removeContainerLogs(path string) error {
	if path == "" || !filepath.IsAbs(path) {
		return nil
	}
	path = filepath.Clean(path)
	if g.podLogsDir != "" && !strings.HasPrefix(path, filepath.Clean(g.podLogsDir)+string(filepath.Separator)) {
		return nil
	}
	rotated, _ := filepath.Glob(path + ".*")
	var errs []error
	for _, p := range append([]string{path}, rotated...) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("container GC: removing log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// removeSandbox stops (in case nobody did) and removes a sandbox.
func (g *ContainerGC) removeSandbox(ctx context.Context, s Sandbox) error {
	if err := g.rt.StopPodSandbox(ctx, s.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
		return fmt.Errorf("container GC: stopping sandbox %s (pod %s) before removal: %w", s.ID, s.PodUID, err)
	}
	if err := g.rt.RemovePodSandbox(ctx, s.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
		return fmt.Errorf("container GC: removing sandbox %s (pod %s): %w", s.ID, s.PodUID, err)
	}
	return nil
}

// removeLogDirs deletes the log directories of pods that are not wanted and
// of which nothing is left in the runtime after this pass.
func (g *ContainerGC) removeLogDirs(ctx context.Context, containers []Container, sandboxes []Sandbox, res Result, failed map[types.UID]bool, podWanted func(types.UID) bool) ([]string, error) {
	entries, err := os.ReadDir(g.podLogsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("container GC: reading pod logs dir: %w", err)
	}
	gone := map[string]bool{}
	for _, c := range res.Containers {
		gone[c.ID] = true
	}
	for _, s := range res.Sandboxes {
		gone[s.ID] = true
	}
	present := map[types.UID]bool{}
	for uid := range failed {
		present[uid] = true
	}
	for _, c := range containers {
		if !gone[c.ID] {
			present[c.PodUID] = true
		}
	}
	for _, s := range sandboxes {
		if !gone[s.ID] {
			present[s.PodUID] = true
		}
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	var removed []string
	var errs []error
	for _, d := range PlanPodLogDirs(names, podWanted, func(uid types.UID) bool { return present[uid] }) {
		if err := cleanup.RemoveAll(filepath.Join(g.podLogsDir, d)); err != nil {
			errs = append(errs, fmt.Errorf("container GC: removing pod log dir: %w", err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removed pod log directory", "dir", d)
		g.metrics.logDirsRemoved.Inc()
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}

func containerIDs(cs []Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}
