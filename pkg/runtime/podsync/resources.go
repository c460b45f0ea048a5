package podsync

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The pod-resource pipeline: what a pod's containers need besides their
// image (volumes today; devices, the pod cgroup and persistent volumes
// next) is prepared by resource hooks, run in the order resourceHooks
// declares, each in a file of its own. Adding a kind of pod resource means
// adding a hook there, not editing the syncer. Nomad's alloc-runner hooks
// are the model: one required interface and optional ones a hook
// implements when it has something to do at that point.

// Resources is what the hooks prepared for a pod's containers, the input
// of their CRI configs besides the spec.
type Resources struct {
	// VolumePaths are the node paths backing the pod's volumes, by name.
	VolumePaths map[string]string
}

// merge adds what one hook prepared; a name prepared twice is a bug in
// the pipeline's declaration.
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

// RunningKeeper is a ResourceHook whose resources must be kept current
// while the pod runs: KeepRunning is called at each sync of a running pod
// with nothing to start (after a restart of nodelet, that is how the hook
// learns of the pods it adopted).
type RunningKeeper interface {
	KeepRunning(ctx context.Context, pod *v1.Pod) error
}

// resourceHooks declares the pipeline, in the order its hooks run.
func resourceHooks(opts Options) []ResourceHook {
	return []ResourceHook{
		&volumeHook{config: opts.Config, provider: opts.Volumes},
	}
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
