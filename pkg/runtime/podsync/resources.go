package podsync

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// The pod-resource pipeline: what a pod's containers need besides their
// image (the pod cgroup and volumes today; devices and persistent volumes
// next) is prepared by resource hooks, run in the order resourceHooks
// declares, each in a file of its own. Adding a kind of pod resource means
// adding a hook there, not editing the syncer. Nomad's alloc-runner hooks
// are the model: one required interface and optional ones a hook
// implements when it has something to do at that point.
//
// A start of containers runs the phases in this order: CheckSpec (no I/O),
// PrepareSandbox (before the sandbox config is built: the sandbox is
// created in what it returns), Prepare (before the sandbox is created and
// the containers with what it returns); each phase runs the hooks in
// declared order and merges what they return. Package criconfig turns the
// merged resources into CRI configs.

// Resources is what the hooks prepared for a pod's containers, the input
// of their CRI configs besides the spec.
type Resources struct {
	// VolumePaths are the node paths backing the pod's volumes, by name.
	VolumePaths map[string]string
	// Containers are what was prepared for single containers besides
	// volumes (devices, variables, mounts), by container name.
	Containers map[string]criconfig.ContainerResources
}

// merge adds what one hook prepared; a volume, device path, variable or
// mount path prepared twice is a bug in the pipeline's declaration.
func (r *Resources) merge(hook string, add Resources) error {
	for name, path := range add.VolumePaths {
		if _, ok := r.VolumePaths[name]; ok {
			return fmt.Errorf("resource hook %s: volume %q prepared twice", hook, name)
		}
		if r.VolumePaths == nil {
			r.VolumePaths = map[string]string{}
		}
		r.VolumePaths[name] = path
	}
	for name, c := range add.Containers {
		have := r.Containers[name]
		if err := errors.Join(
			twice("device", have.Devices, c.Devices, (*runtimeapi.Device).GetContainerPath),
			twice("variable", have.Env, c.Env, (*runtimeapi.KeyValue).GetKey),
			twice("mount", have.Mounts, c.Mounts, (*runtimeapi.Mount).GetContainerPath),
		); err != nil {
			return fmt.Errorf("resource hook %s: container %q: %w", hook, name, err)
		}
		have.Devices = append(have.Devices, c.Devices...)
		have.Env = append(have.Env, c.Env...)
		have.Mounts = append(have.Mounts, c.Mounts...)
		if r.Containers == nil {
			r.Containers = map[string]criconfig.ContainerResources{}
		}
		r.Containers[name] = have
	}
	return nil
}

// twice fails for the first of add whose key is in have's or earlier in
// add's.
func twice[T any](what string, have, add []T, key func(T) string) error {
	seen := make(map[string]bool, len(have)+len(add))
	for _, x := range have {
		seen[key(x)] = true
	}
	for _, x := range add {
		k := key(x)
		if seen[k] {
			return fmt.Errorf("%s %q prepared twice", what, k)
		}
		seen[k] = true
	}
	return nil
}

// ResourceHook prepares one kind of pod resource.
type ResourceHook interface {
	// Name names the hook in errors and logs.
	Name() string
	// Prepare makes the hook's resources of pod exist before containers
	// are created. It is called before every start of containers, so it
	// must be cheap for a pod it prepared before. Its error is reported as
	// a failed mount: the containers wait in ContainerCreating.
	Prepare(ctx context.Context, pod *v1.Pod) (Resources, error)
	// Teardown releases what Prepare made for a pod that is gone from the
	// node and whose containers are all removed; its directory is removed
	// after.
	Teardown(ctx context.Context, uid types.UID) error
}

// SpecChecker is a ResourceHook that can refuse a pod spec before anything
// is done for it (a CreateContainerConfigError): a resource it does not know
// how to make. CheckSpec does no I/O.
type SpecChecker interface {
	CheckSpec(pod *v1.Pod) error
}

// SandboxHook is a ResourceHook with something to prepare before the pod's
// sandbox exists, because the sandbox is created with it (the pod cgroup,
// the sandbox's cgroup parent). PrepareSandbox is called before every
// start of containers, before the sandbox config is built, so it must be
// cheap for a pod it prepared before. Its error fails the start as one of
// creating the sandbox would (FailedCreatePodSandBox).
type SandboxHook interface {
	PrepareSandbox(ctx context.Context, pod *v1.Pod) (criconfig.SandboxResources, error)
}

// RunningKeeper is a ResourceHook whose resources must be kept current
// while the pod runs: KeepRunning is called at each sync of a running pod
// with nothing to start (after a restart of nodelet, that is how the hook
// learns of the pods it adopted).
type RunningKeeper interface {
	KeepRunning(ctx context.Context, pod *v1.Pod) error
}

// Releaser is a ResourceHook with something to release as soon as a pod
// is stopped - every container and sandbox stopped by KillPod - rather than
// once they are removed, which container GC may do much later: the pod
// cgroup, which upstream removes when the pod terminates. A failure is
// logged; Teardown tries again.
type Releaser interface {
	Release(ctx context.Context, uid types.UID) error
}

// resourceHooks declares the pipeline, in the order its hooks run; they
// are torn down in reverse, so the pod cgroup goes last.
func resourceHooks(opts Options) []ResourceHook {
	var hooks []ResourceHook
	if opts.Cgroups != nil {
		hooks = append(hooks, &cgroupHook{cgroups: opts.Cgroups})
	}
	return append(hooks, newVolumeHook(opts.Config, opts.Volumes))
}

// checkSpec fails for the first resource of pod a hook refuses.
func (s *Syncer) checkSpec(pod *v1.Pod) error {
	for _, h := range s.resources {
		if c, ok := h.(SpecChecker); ok {
			if err := c.CheckSpec(pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepareSandbox runs the SandboxHooks' PrepareSandbox in order and stops
// at the first failure; a cgroup parent set by two is a bug in the
// pipeline's declaration.
func (s *Syncer) prepareSandbox(ctx context.Context, pod *v1.Pod) (criconfig.SandboxResources, error) {
	var res criconfig.SandboxResources
	for _, h := range s.resources {
		sh, ok := h.(SandboxHook)
		if !ok {
			continue
		}
		add, err := sh.PrepareSandbox(ctx, pod)
		if err != nil {
			return criconfig.SandboxResources{}, fmt.Errorf("resource hook %s: %w", h.Name(), err)
		}
		if add.CgroupParent != "" {
			if res.CgroupParent != "" {
				return criconfig.SandboxResources{}, fmt.Errorf("resource hook %s: cgroup parent prepared twice", h.Name())
			}
			res.CgroupParent = add.CgroupParent
		}
	}
	return res, nil
}

// prepareResources runs the hooks' Prepare in order and stops at the first
// failure.
func (s *Syncer) prepareResources(ctx context.Context, pod *v1.Pod) (Resources, error) {
	var res Resources
	for _, h := range s.resources {
		add, err := h.Prepare(ctx, pod)
		if err != nil {
			return Resources{}, err
		}
		if err := res.merge(h.Name(), add); err != nil {
			return Resources{}, err
		}
	}
	return res, nil
}

// keepResources runs the hooks' KeepRunning for a running pod with nothing
// to start; a failure is the sync's error.
func (p *podSync) keepResources(ctx context.Context) {
	if !p.anyRunning() {
		return
	}
	for _, h := range p.s.resources {
		if k, ok := h.(RunningKeeper); ok {
			p.fail(k.KeepRunning(ctx, p.pod))
		}
	}
}

// releaseResources runs the Releasers' Release, in reverse order, each
// whatever the others did; failures are logged.
func (s *Syncer) releaseResources(ctx context.Context, uid types.UID) {
	for i := len(s.resources) - 1; i >= 0; i-- {
		if r, ok := s.resources[i].(Releaser); ok {
			if err := r.Release(ctx, uid); err != nil {
				klog.InfoS("Could not release a stopped pod's resources yet; retried when the pod is removed", "hook", s.resources[i].Name(), "podUID", uid, "err", err)
			}
		}
	}
}

// teardownResources runs every hook's Teardown, in reverse order, each
// whatever the others did.
func (s *Syncer) teardownResources(ctx context.Context, uid types.UID) error {
	var errs []error
	for i := len(s.resources) - 1; i >= 0; i-- {
		h := s.resources[i]
		if err := h.Teardown(ctx, uid); err != nil {
			errs = append(errs, fmt.Errorf("resource hook %s: %w", h.Name(), err))
		}
	}
	return errors.Join(errs...)
}
