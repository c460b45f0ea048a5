package podsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
)

// startContainer creates and starts one planned container instance. On
// failure it returns the waiting reason to report along with the error.
func (s *Syncer) startContainer(ctx context.Context, pod *v1.Pod, st plan.Start, sandboxID string,
	sbConfig *runtimeapi.PodSandboxConfig, img imageResult, res Resources, podIPs []string, hostsFile string) (runtime.ContainerWaiting, error) {
	if st.Target != "" && st.TargetID == "" {
		// Upstream's message: the target's process namespace cannot be
		// joined when no instance of it runs. The next sync tries again.
		err := fmt.Errorf("unable to find target container %v", st.Target)
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %v", err)
		return runtime.ContainerWaiting{Reason: ReasonCreateContainerConfigError, Message: err.Error()},
			fmt.Errorf("%w: container %q: %w", ErrCreateContainerConfig, st.Name, err)
	}
	msgFile, err := s.terminationMessageFile(pod, st.Spec)
	if err != nil {
		return runtime.ContainerWaiting{Reason: ReasonCreateContainerError, Message: err.Error()}, err
	}
	params := criconfig.ContainerParams{
		RestartCount:           st.RestartCount,
		ImageRef:               img.ref,
		PodIPs:                 podIPs,
		VolumePaths:            res.VolumePaths,
		TerminationMessageFile: msgFile,
		EtcHostsFile:           hostsFile,
		Resources:              res.Containers[st.Name],
		TargetContainerID:      st.TargetID,
		Warn: func(reason, message string) {
			s.event(pod, v1.EventTypeWarning, reason, "%s", message)
		},
	}
	user, err := s.imageUserOf(ctx, pod, st.Spec, img)
	if user != nil {
		params.ImageUID, params.ImageUser = user.uid, user.name
	}
	var cfg *runtimeapi.ContainerConfig
	var binds []criconfig.SubpathMount
	if err == nil {
		params.EnvObjects = s.readEnvObjects(ctx, pod, st.Spec)
		cfg, binds, err = criconfig.ContainerConfig(pod, st.Spec, params, s.opts.Config)
	}
	if err == nil && s.opts.Devices != nil {
		err = s.opts.Devices.Apply(ctx, pod, st.Spec, cfg)
	}
	if err == nil {
		// Last: binding subPaths is I/O, done only for a config that is
		// otherwise complete.
		err = s.bindSubpaths(st.Spec.Name, binds)
	}
	if err != nil {
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %v", err)
		return runtime.ContainerWaiting{Reason: ReasonCreateContainerConfigError, Message: err.Error()},
			fmt.Errorf("%w: %w", ErrCreateContainerConfig, err)
	}
	if !st.AfterExit.IsZero() {
		// A crash-loop restart: the next one waits longer.
		s.crash.restarted(pod.UID, st.Name, st.AfterExit)
	}
	// Runtimes differ in whether they create the log file's directory.
	if err := os.MkdirAll(filepath.Join(sbConfig.LogDirectory, st.Name), 0o755); err != nil {
		err = fmt.Errorf("create log directory of container %q: %w", st.Name, err)
		return runtime.ContainerWaiting{Reason: ReasonCreateContainerError, Message: err.Error()}, err
	}

	start := s.clock.Now()
	id, err := s.rt.CreateContainer(ctx, sandboxID, cfg, sbConfig)
	s.observe(OpCreateContainer, start, err)
	if err != nil {
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %v", err)
		return runtime.ContainerWaiting{Reason: ReasonCreateContainerError, Message: err.Error()},
			fmt.Errorf("%w: %w", ErrCreateContainer, err)
	}
	s.event(pod, v1.EventTypeNormal, ReasonCreated, "Created container %s", st.Name)

	start = s.clock.Now()
	err = s.rt.StartContainer(ctx, id)
	s.observe(OpStartContainer, start, err)
	if err != nil {
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %v", err)
		return runtime.ContainerWaiting{Reason: ReasonRunContainerError, Message: err.Error()},
			fmt.Errorf("%w: container %q: %w", ErrRunContainer, st.Name, err)
	}
	s.event(pod, v1.EventTypeNormal, ReasonStarted, "Started container %s", st.Name)
	// The container counts as running only once its postStart hook returned.
	if w, err := s.runPostStart(ctx, pod, startSpec{name: st.Name, spec: st.Spec}, id, podIPs); err != nil {
		return w, err
	}
	klog.V(3).InfoS("Started container", "pod", klog.KObj(pod), "container", st.Name,
		"containerID", id, "restartCount", st.RestartCount, "reason", st.Reason)
	return runtime.ContainerWaiting{}, nil
}
