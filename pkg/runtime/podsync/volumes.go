package podsync

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/tmpfs"
	"github.com/nodelet/nodelet/pkg/volumes"
)

// VolumeProvider makes the volumes whose content comes from the API server
// (projected service-account token, config map, secret and downward API
// volumes) and keeps them current while the pod runs. The Syncer makes
// emptyDir and hostPath volumes itself; every other volume is the
// provider's, at its criconfig.VolumeHostPath. Cluster mode only: without one
// (standalone) such volumes fail the pod as unsupported.
type VolumeProvider interface {
	// Check fails, wrapping criconfig.ErrUnsupported, for a volume of pod it
	// cannot make, including volumes of types it does not know. It does
	// no I/O: a failure is a property of the spec.
	Check(pod *v1.Pod, v *v1.Volume) error
	// Prepare writes the content of the pod's provided volumes before its
	// containers are created, and from then on keeps it current. It is
	// called before every container start and at every sync of a running
	// pod (so pods adopted after a restart of nodelet are kept current
	// too): it must be cheap for a pod it already prepared.
	Prepare(ctx context.Context, pod *v1.Pod) error
	// Cleanup forgets a pod that is gone from the node: its volumes are
	// no longer refreshed.
	Cleanup(uid types.UID)
}

// errNoProvider explains why a provided volume type fails in standalone
// mode.
var errNoProvider = errors.New("volumes with content from the API server need --kubeconfig")

// volumeHook is the pod-resource pipeline's volume step: it makes emptyDir
// and hostPath volumes itself and hands the others to the provider.
type volumeHook struct {
	config   criconfig.ConfigOptions
	provider VolumeProvider
}

var (
	_ SpecChecker   = (*volumeHook)(nil)
	_ RunningKeeper = (*volumeHook)(nil)
)

func (*volumeHook) Name() string { return "volumes" }

// CheckSpec fails for the first volume neither the hook nor the provider
// can make.
func (h *volumeHook) CheckSpec(pod *v1.Pod) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if criconfig.IsBuiltinVolume(v) {
			if err := criconfig.CheckVolume(v); err != nil {
				return err
			}
			continue
		}
		if h.provider == nil {
			err := criconfig.CheckVolume(v)
			if v.Projected != nil {
				err = fmt.Errorf("%w (%w)", err, errNoProvider)
			}
			return err
		}
		if err := h.provider.Check(pod, v); err != nil {
			return fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	return nil
}

// KeepRunning hands a pod that runs and has nothing to start to the
// provider, which then keeps its volumes current. After a restart of
// nodelet that is how the provider learns of the pods it adopted; for a
// pod it knows, Prepare does nothing.
func (h *volumeHook) KeepRunning(ctx context.Context, pod *v1.Pod) error {
	if h.provider == nil || !hasProvidedVolumes(pod) {
		return nil
	}
	return h.provider.Prepare(ctx, pod)
}

func (p *podSync) anyRunning() bool {
	if p.status == nil {
		return false
	}
	for _, c := range p.status.Containers {
		if c.State == runtime.ContainerStateRunning {
			return true
		}
	}
	return false
}

func hasProvidedVolumes(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if !criconfig.IsBuiltinVolume(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

// Teardown tells the provider a pod is gone and unmounts the tmpfs mounts
// of its volumes (Memory emptyDirs, the provider's secrets and tokens), so
// that removing the pod directory finds plain directories.
func (h *volumeHook) Teardown(_ context.Context, uid types.UID) error {
	if h.provider != nil && uid != "" {
		h.provider.Cleanup(uid)
	}
	if err := tmpfs.UnmountPod(h.config.RootDir, string(uid)); err != nil {
		return fmt.Errorf("unmount pod volumes: %w", err)
	}
	return nil
}

// Prepare makes the node side of a pod's volumes exist: emptyDir
// directories, hostPath paths per their type (created for ...OrCreate,
// checked otherwise), and the provider's volumes. Unsupported volume types
// were rejected before (CheckSpec).
func (h *volumeHook) Prepare(ctx context.Context, pod *v1.Pod) (Resources, error) {
	paths, err := criconfig.VolumePaths(pod, h.config)
	if err != nil {
		return Resources{}, err
	}
	provided := false
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !criconfig.IsBuiltinVolume(v) {
			provided = true
			continue
		}
		if err := volumes.SetUpBuiltin(pod, v, paths[v.Name]); err != nil {
			return Resources{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	if provided && h.provider != nil {
		if err := h.provider.Prepare(ctx, pod); err != nil {
			return Resources{}, err
		}
	}
	return Resources{VolumePaths: paths}, nil
}
