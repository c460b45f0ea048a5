package podsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
	"github.com/nodelet/nodelet/pkg/volumes/cleanup"
)

// defaultGrace is the API's default terminationGracePeriodSeconds, for
// containers whose grace period is known from nowhere.
const defaultGrace = v1.DefaultTerminationGracePeriodSeconds * time.Second

// KillPod stops everything of a pod that may still run: all containers
// that have not exited, in parallel (a sidecar's stop signal waits for the
// app containers and the sidecars after it; preStop hooks all run at
// once), each with its grace period (the
// runtime sends SIGTERM, then SIGKILL once the grace period is over), and
// then its sandboxes. pod may be nil for an orphan found in the runtime;
// gracePeriod, when set, overrides every container's grace period (in
// seconds). Containers and sandboxes already gone are not an error. Once
// everything is stopped the pod's resources that go with a stopped pod are
// released (Releaser: its cgroup, the bind mounts of its persistent volumes).
func (s *Syncer) KillPod(ctx context.Context, pod *v1.Pod, status *runtime.PodStatus, gracePeriod *int64) error {
	if status == nil {
		return nil
	}
	if err := s.killPod(ctx, pod, status, gracePeriod); err != nil {
		return err
	}
	s.releaseResources(ctx, status.UID)
	return nil
}

// killPod is KillPod without the release: for a sandbox that is replaced
// within a sync, whose pod goes on.
func (s *Syncer) killPod(ctx context.Context, pod *v1.Pod, status *runtime.PodStatus, gracePeriod *int64) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	collect := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	var live []*runtime.ContainerStatus
	for _, cs := range status.Containers {
		if cs.State != runtime.ContainerStateExited {
			live = append(live, cs)
		}
	}
	// Sidecars serve the app containers to the end: every preStop hook
	// runs at once, but a sidecar gets its stop signal only after the app
	// containers and the sidecars after it stopped, within its own grace
	// period (upstream's termination ordering).
	first, sidecars := plan.TerminationOrder(pod, live)
	start := s.clock.Now()
	var apps sync.WaitGroup
	for _, cs := range first {
		apps.Go(func() { collect(s.KillContainer(ctx, pod, cs, gracePeriod, "")) })
	}
	appsDone := make(chan struct{})
	go func() { apps.Wait(); close(appsDone) }()
	var turn <-chan struct{} = appsDone
	for _, cs := range sidecars {
		mine, next := turn, make(chan struct{})
		turn = next
		wg.Go(func() {
			defer close(next)
			collect(s.killContainerInTurn(ctx, pod, cs, plan.Kill{Name: cs.Name, GracePeriod: gracePeriod}, mine, start))
		})
	}
	apps.Wait()
	wg.Wait()

	// The newest sandbox is stopped even when not ready: stopping releases
	// its network (IP, port mappings) if its pause process died.
	for i, sb := range status.Sandboxes {
		if i > 0 && sb.State != runtime.SandboxStateReady {
			continue
		}
		wg.Go(func() {
			start := s.clock.Now()
			err := ignoreNotFound(s.rt.StopPodSandbox(ctx, sb.ID))
			s.observe(OpStopSandbox, start, err)
			collect(err)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kill pod %s/%s: %w", status.Namespace, status.Name, err)
	}
	return nil
}

// KillContainer stops one container with its grace period: gracePeriod
// (seconds) when set, else the pod's deletion or termination grace period,
// else the one stamped on the container at creation, else 30 s. pod may be
// nil for an orphan. reason, when set, is added to the Killing event. A
// running container's preStop hook runs first; the container gets the
// grace the hook left.
func (s *Syncer) KillContainer(ctx context.Context, pod *v1.Pod, cs *runtime.ContainerStatus, gracePeriod *int64, reason string) error {
	return s.killContainer(ctx, pod, cs, plan.Kill{Name: cs.Name, Reason: reason, GracePeriod: gracePeriod})
}

// killContainer is KillContainer as a plan asks: k.Message, when set, is
// the whole Killing event message.
func (s *Syncer) killContainer(ctx context.Context, pod *v1.Pod, cs *runtime.ContainerStatus, k plan.Kill) error {
	return s.killContainerInTurn(ctx, pod, cs, k, nil, time.Time{})
}

// killContainerInTurn is killContainer that, after the preStop hook, waits
// for turn (when set) to be closed before the stop signal, at most until
// its grace period, counted from since, is used up.
func (s *Syncer) killContainerInTurn(ctx context.Context, pod *v1.Pod, cs *runtime.ContainerStatus, k plan.Kill,
	turn <-chan struct{}, since time.Time) error {
	grace, reason := containerGrace(pod, cs, k.GracePeriod), k.Reason
	total := grace
	msg := k.Message
	if msg == "" {
		msg = fmt.Sprintf("Stopping container %s", cs.Name)
		if reason != "" {
			msg += ": " + reason
		}
	}
	s.event(pod, v1.EventTypeNormal, ReasonKilling, "%s", msg)
	// The preStop hook runs before the stop signal, within the grace period.
	grace = s.runPreStop(ctx, pod, cs, grace)
	if turn != nil {
		select {
		case <-turn:
		case <-s.clock.After(grace):
		case <-ctx.Done():
		}
		grace = max(total-s.clock.Since(since), min(total, minStopGrace))
	}
	klog.V(3).InfoS("Stopping container", "pod", klog.KObj(pod), "container", cs.Name,
		"containerID", cs.ID, "grace", grace, "reason", reason)
	start := s.clock.Now()
	err := ignoreNotFound(s.rt.StopContainer(ctx, cs.ID, grace))
	s.observe(OpStopContainer, start, err)
	if err != nil {
		return fmt.Errorf("kill container %q: %w", cs.Name, err)
	}
	return nil
}

func containerGrace(pod *v1.Pod, cs *runtime.ContainerStatus, override *int64) time.Duration {
	var secs *int64
	switch {
	case override != nil:
		secs = override
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		secs = pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		secs = pod.Spec.TerminationGracePeriodSeconds
	case cs.TerminationGracePeriod != nil:
		secs = cs.TerminationGracePeriod
	default:
		return defaultGrace
	}
	return time.Duration(max(*secs, 0)) * time.Second
}

// RemovePod removes what a killed pod left in the runtime - its exited
// containers and stopped sandboxes - and, once nothing is left, its emptyDir
// volumes and log directory and its back-off records. It fails with
// ErrStillRunning, after removing what it could, when something still runs.
func (s *Syncer) RemovePod(ctx context.Context, status *runtime.PodStatus) error {
	if status == nil {
		return nil
	}
	var errs []error
	running := 0
	for _, cs := range status.Containers {
		if cs.State == runtime.ContainerStateRunning {
			running++
			continue
		}
		if err := ignoreNotFound(s.rt.RemoveContainer(ctx, cs.ID)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sb := range status.Sandboxes {
		if sb.State == runtime.SandboxStateReady {
			running++
			continue
		}
		if err := ignoreNotFound(s.rt.RemovePodSandbox(ctx, sb.ID)); err != nil {
			errs = append(errs, err)
		}
	}
	if running > 0 {
		errs = append(errs, fmt.Errorf("%d containers or sandboxes: %w", running, ErrStillRunning))
	}
	if len(errs) == 0 {
		if err := s.teardownResources(ctx, status.UID); err != nil {
			klog.ErrorS(err, "Could not tear down pod resources", "podUID", status.UID)
		}
		errs = append(errs, s.removePodDirs(status))
		for _, cs := range status.Containers {
			s.crash.forget(status.UID, cs.Name)
		}
		s.pulls.forgetPod(status.UID)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pod %s/%s: %w", status.Namespace, status.Name, err)
	}
	return nil
}

// removePodDirs deletes the pod's directory under the root dir (emptyDir
// volumes) and its log directory. No container uses them any more. Mounts
// nodelet made there are unmounted; any other mount (a root dir taken over
// from another kubelet) is left in place with its content and reported.
func (s *Syncer) removePodDirs(status *runtime.PodStatus) error {
	var errs []error
	if root := s.opts.Config.RootDir; root != "" && status.UID != "" {
		errs = append(errs, cleanup.RemoveAll(layout.PodDir(root, status.UID)))
	}
	if logs := s.opts.Config.PodLogsDir; logs != "" && status.UID != "" && status.Name != "" {
		errs = append(errs, cleanup.RemoveAll(criconfig.PodLogDir(logs, status.Namespace, status.Name, status.UID)))
	}
	return errors.Join(errs...)
}

// prune removes dead instances and sandboxes the plan no longer needs. It is
// tidying up: failures are logged and retried at the next sync.
func (s *Syncer) prune(ctx context.Context, containers, sandboxes []string) {
	for _, id := range containers {
		if err := ignoreNotFound(s.rt.RemoveContainer(ctx, id)); err != nil {
			klog.V(2).InfoS("Could not remove dead container", "containerID", id, "err", err)
		}
	}
	for _, id := range sandboxes {
		if err := ignoreNotFound(s.rt.RemovePodSandbox(ctx, id)); err != nil {
			klog.V(2).InfoS("Could not remove dead sandbox", "sandboxID", id, "err", err)
		}
	}
}
