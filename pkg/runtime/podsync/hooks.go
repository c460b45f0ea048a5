package podsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/lifecycle"
)

// HookRunner runs one lifecycle hook against a container and waits for it;
// *lifecycle.Runner implements it. On failure it returns the message to
// report with the error.
type HookRunner interface {
	Run(ctx context.Context, t lifecycle.Target, h *v1.LifecycleHandler) (string, error)
}

// minStopGrace is what a container still gets after a preStop hook used up
// its grace period, so it is not SIGKILLed without a chance (upstream's
// minimum).
const minStopGrace = 2 * time.Second

// ErrNoHookRunner: a pod has lifecycle hooks but the Syncer cannot run them.
var ErrNoHookRunner = errors.New("lifecycle hooks are not supported by this runtime")

// runPostStart runs c's postStart hook, if any, on the container just
// started. A failed hook kills the container, which then restarts by the
// pod's restart policy like any container that exited.
func (s *Syncer) runPostStart(ctx context.Context, pod *v1.Pod, st startSpec, id string, podIPs []string) (runtime.ContainerWaiting, error) {
	h := postStart(st.spec)
	if h == nil {
		return runtime.ContainerWaiting{}, nil
	}
	if s.hooks == nil {
		return runtime.ContainerWaiting{Reason: ReasonPostStartHookError, Message: ErrNoHookRunner.Error()}, ErrNoHookRunner
	}
	t := lifecycle.Target{Pod: pod, Container: st.spec, ID: id, PodIP: s.hookIP(pod, podIPs)}
	msg, err := s.hooks.Run(ctx, t, h)
	if err == nil {
		return runtime.ContainerWaiting{}, nil
	}
	klog.ErrorS(err, "PostStart hook failed", "pod", klog.KObj(pod), "container", st.name, "containerID", id)
	// The hook's output may hold secrets: the event does not carry it.
	s.event(pod, v1.EventTypeWarning, ReasonFailedPostStartHook, "PostStartHook failed")
	cs := &runtime.ContainerStatus{ID: id, Name: st.name, State: runtime.ContainerStateRunning}
	if kerr := s.KillContainer(ctx, pod, cs, nil, ReasonFailedPostStartHook); kerr != nil {
		klog.ErrorS(kerr, "Kill container after failed postStart hook", "pod", klog.KObj(pod), "container", st.name)
	}
	return runtime.ContainerWaiting{Reason: ReasonPostStartHookError, Message: msg},
		fmt.Errorf("%w: container %q: %w", ErrPostStartHook, st.name, err)
}

// startSpec is the part of a plan.Start the hooks need.
type startSpec struct {
	name string
	spec *v1.Container
}

// runPreStop runs the preStop hook of a running container within grace
// and returns the grace left for stopping it: what the hook did not use,
// but at least minStopGrace.
func (s *Syncer) runPreStop(ctx context.Context, pod *v1.Pod, cs *runtime.ContainerStatus, grace time.Duration) time.Duration {
	spec := specOf(pod, cs.Name)
	h := preStop(spec)
	if h == nil || grace <= 0 || cs.State != runtime.ContainerStateRunning {
		return grace
	}
	if s.hooks == nil {
		klog.ErrorS(ErrNoHookRunner, "PreStop hook not run", "pod", klog.KObj(pod), "container", cs.Name)
		s.event(pod, v1.EventTypeWarning, ReasonFailedPreStopHook, "PreStopHook failed")
		return grace
	}
	start := s.clock.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	t := lifecycle.Target{Pod: pod, Container: spec, ID: cs.ID, PodIP: s.sandboxIP(hctx, pod, cs, h)}
	_, err := s.hooks.Run(hctx, t, h)
	switch {
	case err != nil && hctx.Err() != nil && ctx.Err() == nil:
		klog.V(2).InfoS("PreStop hook did not complete within the grace period", "pod", klog.KObj(pod),
			"container", cs.Name, "grace", grace)
	case err != nil:
		klog.ErrorS(err, "PreStop hook failed", "pod", klog.KObj(pod), "container", cs.Name)
		s.event(pod, v1.EventTypeWarning, ReasonFailedPreStopHook, "PreStopHook failed")
	}
	return max(grace-s.clock.Since(start), minStopGrace)
}

// hookIP is the host of an httpGet hook naming none: the pod IP, or the
// node's for a pod on the host network.
func (s *Syncer) hookIP(pod *v1.Pod, podIPs []string) string {
	if pod.Spec.HostNetwork {
		if len(s.opts.Config.NodeIPs) > 0 {
			return s.opts.Config.NodeIPs[0]
		}
		return "127.0.0.1"
	}
	if len(podIPs) > 0 {
		return podIPs[0]
	}
	return ""
}

// sandboxIP looks the pod IP up for an httpGet preStop hook that needs it.
func (s *Syncer) sandboxIP(ctx context.Context, pod *v1.Pod, cs *runtime.ContainerStatus, h *v1.LifecycleHandler) string {
	if h.HTTPGet == nil || h.HTTPGet.Host != "" || pod.Spec.HostNetwork || cs.SandboxID == "" {
		return s.hookIP(pod, nil)
	}
	st, err := s.rt.PodSandboxStatus(ctx, cs.SandboxID, false)
	if err != nil {
		klog.V(2).InfoS("No pod IP for preStop hook", "pod", klog.KObj(pod), "err", err)
		return ""
	}
	return st.GetNetwork().GetIp()
}

// hookNeedsPodIP: c's postStart hook is an httpGet to the pod itself.
func hookNeedsPodIP(c *v1.Container) bool {
	h := postStart(c)
	return h != nil && h.HTTPGet != nil && h.HTTPGet.Host == ""
}

func postStart(c *v1.Container) *v1.LifecycleHandler {
	if c == nil || c.Lifecycle == nil {
		return nil
	}
	return c.Lifecycle.PostStart
}

func preStop(c *v1.Container) *v1.LifecycleHandler {
	if c == nil || c.Lifecycle == nil {
		return nil
	}
	return c.Lifecycle.PreStop
}

// specOf finds the named container (app or init) in pod's spec; nil for an
// orphan or a container the spec no longer has.
func specOf(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
