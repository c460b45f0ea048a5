package volumes

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Plugin makes the volumes of one type on the node. The pod-resource
// pipeline's volume step asks the plugin of each of a pod's volumes to
// check it, set it up before the containers start and tear it down once
// the pod is gone; a volume no plugin supports is refused. A new volume
// type (persistentVolumeClaim, CSI) is one more Plugin in Plugins.
type Plugin interface {
	// Name is the volume type as the API spells it ("emptyDir", ...).
	Name() string
	// CanSupport reports whether v is of the plugin's type.
	CanSupport(v *v1.Volume) bool
	// Check fails for a volume of pod the plugin cannot make. It does no
	// I/O: a failure is a property of the spec. Its error names the
	// volume.
	Check(pod *v1.Pod, v *v1.Volume) error
	// SetUp makes v exist at path (criconfig.VolumeHostPath, where the
	// containers mount it). It is called before every container start and
	// must be cheap for a volume set up before. Its error names the
	// volume.
	SetUp(ctx context.Context, pod *v1.Pod, v *v1.Volume, path string) error
	// TearDown undoes, for a pod that is gone, what removing the pod's
	// directory cannot: mounts, and what the plugin keeps of the pod.
	TearDown(ctx context.Context, uid types.UID) error
}

// Keeper is a Plugin whose volumes change while the pod runs (API
// objects, tokens). KeepCurrent hands it a running pod with nothing to
// start, so that pods adopted after a restart of nodelet are kept current
// too; it is cheap for a pod it knows.
type Keeper interface {
	KeepCurrent(ctx context.Context, pod *v1.Pod) error
}

// Releaser is a Plugin with something to undo as soon as a pod is
// stopped, before the pod is removed (which may be much later): the bind
// mounts of persistent volumes, as upstream unmounts the volumes of a
// terminated pod. A pod started again sets its volumes up again.
type Releaser interface {
	Release(ctx context.Context, uid types.UID) error
}

// Content makes the volumes whose content comes from the API server
// (configMap, secret, downwardAPI, projected) and keeps them current; the
// Provider implements it. Their four plugins share it: it renders all of a
// pod's such volumes at once and refreshes them together.
type Content interface {
	// Check fails, wrapping criconfig.ErrUnsupported, for a volume it
	// cannot make. No I/O.
	Check(pod *v1.Pod, v *v1.Volume) error
	// Prepare writes the pod's volumes with API content and keeps them
	// current from then on; it does no I/O for a pod whose volumes are
	// current.
	Prepare(ctx context.Context, pod *v1.Pod) error
	// Cleanup forgets a pod that is gone.
	Cleanup(uid types.UID)
}

// Registry is the plugins of every volume type nodelet makes, the node's
// own (emptyDir, hostPath) first.
type Registry struct {
	plugins []Plugin
	content Content
}

// ClaimContent is Content that also reads persistent volume claims (the
// Provider, when given Options.Claims): with it the registry has the
// persistentVolumeClaim plugin.
type ClaimContent interface {
	Content
	Claims() ClaimReader
}

// NewRegistry returns the plugins of nodelet's volume types. Volumes with
// content from the API server need content, which exists in cluster mode
// only: without it (nil) they have no plugin; persistentVolumeClaim
// volumes need a content that is a ClaimContent with a ClaimReader.
func NewRegistry(rootDir string, content Content) *Registry {
	r := &Registry{plugins: []Plugin{emptyDirPlugin{rootDir: rootDir}, hostPathPlugin{}}, content: content}
	if content != nil {
		r.plugins = append(r.plugins, apiPlugins(rootDir, content)...)
	}
	if cc, ok := content.(ClaimContent); ok && cc.Claims() != nil {
		r.plugins = append(r.plugins, newClaimPlugin(rootDir, cc.Claims()))
	}
	return r
}

// Find returns the plugin of v, or nil when none supports it.
func (r *Registry) Find(v *v1.Volume) Plugin {
	for _, p := range r.plugins {
		if p.CanSupport(v) {
			return p
		}
	}
	return nil
}

// TearDown tears down a gone pod's volumes of every type. The content
// shared by the API plugins forgets the pod first, once, so that no
// refresh writes into a volume being unmounted.
func (r *Registry) TearDown(ctx context.Context, uid types.UID) error {
	if r.content != nil {
		r.content.Cleanup(uid)
	}
	var errs []error
	for _, p := range r.plugins {
		if err := p.TearDown(ctx, uid); err != nil {
			errs = append(errs, fmt.Errorf("tear down %s volumes: %w", p.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Release runs the Releasers' Release for a stopped pod.
func (r *Registry) Release(ctx context.Context, uid types.UID) error {
	var errs []error
	for _, p := range r.plugins {
		if rel, ok := p.(Releaser); ok {
			if err := rel.Release(ctx, uid); err != nil {
				errs = append(errs, fmt.Errorf("release %s volumes: %w", p.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}
