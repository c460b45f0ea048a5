package podsync

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/volumes"
)

// VolumeProvider makes the volumes whose content comes from the API server
// (projected service-account token, config map, secret and downward API
// volumes) and keeps them current while the pod runs: the content their
// volume plugins share. Cluster mode only: without one (standalone) such
// volumes fail the pod as unsupported. It is called before every
// container start and at every sync of a running pod (so pods adopted
// after a restart of nodelet are kept current too).
type VolumeProvider = volumes.Content

// errNoProvider explains why a provided volume type fails in standalone
// mode.
var errNoProvider = errors.New("volumes with content from the API server need --kubeconfig")

// errNoClaims explains why a persistentVolumeClaim volume fails in
// standalone mode.
var errNoClaims = errors.New("persistentVolumeClaim volumes need --kubeconfig: the claim and its volume are read from the API server")

// volumeHook is the pod-resource pipeline's volume step: it asks the
// plugin of each of a pod's volumes (package volumes) to make it. The
// plugins of volumes with API content exist when there is a provider.
type volumeHook struct {
	config  criconfig.ConfigOptions
	plugins *volumes.Registry
}

var (
	_ SpecChecker   = (*volumeHook)(nil)
	_ RunningKeeper = (*volumeHook)(nil)
	_ Releaser      = (*volumeHook)(nil)
)

func newVolumeHook(config criconfig.ConfigOptions, provider VolumeProvider) *volumeHook {
	return &volumeHook{config: config, plugins: volumes.NewRegistry(config.RootDir, provider)}
}

func (*volumeHook) Name() string { return "volumes" }

// CheckSpec fails for the first volume no plugin can make.
func (h *volumeHook) CheckSpec(pod *v1.Pod) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		plugin := h.plugins.Find(v)
		if plugin == nil {
			err := criconfig.CheckVolume(v)
			switch {
			case v.Projected != nil:
				err = fmt.Errorf("%w (%w)", err, errNoProvider)
			case v.PersistentVolumeClaim != nil:
				err = fmt.Errorf("%w (%w)", err, errNoClaims)
			}
			return err
		}
		if err := plugin.Check(pod, v); err != nil {
			return err
		}
	}
	return nil
}

// KeepRunning hands a pod that runs and has nothing to start to the
// plugins that keep their volumes current. After a restart of nodelet that
// is how they learn of the pods adopted; for a pod they know, it does
// nothing.
func (h *volumeHook) KeepRunning(ctx context.Context, pod *v1.Pod) error {
	for i := range pod.Spec.Volumes {
		if k, ok := h.plugins.Find(&pod.Spec.Volumes[i]).(volumes.Keeper); ok {
			if err := k.KeepCurrent(ctx, pod); err != nil {
				return err
			}
		}
	}
	return nil
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

// Teardown has every plugin tear down what it made for a gone pod
// (the provider forgets it; the tmpfs mounts of Memory emptyDirs, secrets
// and tokens are unmounted), so that removing the pod directory finds
// plain directories.
func (h *volumeHook) Teardown(ctx context.Context, uid types.UID) error {
	if uid == "" {
		return nil
	}
	return h.plugins.TearDown(ctx, uid)
}

// Release has the plugins undo what must not outlive a stopped pod (the
// bind mounts of its persistent volumes).
func (h *volumeHook) Release(ctx context.Context, uid types.UID) error {
	if uid == "" {
		return nil
	}
	return h.plugins.Release(ctx, uid)
}

// Prepare makes the node side of a pod's volumes exist, each by its
// plugin: emptyDir directories, hostPath paths per their type (created for
// ...OrCreate, checked otherwise), and the volumes with API content.
// The node's own volumes come first: a pod that cannot have them costs no
// API call. Unsupported volume types were rejected before (CheckSpec).
func (h *volumeHook) Prepare(ctx context.Context, pod *v1.Pod) (Resources, error) {
	paths, err := criconfig.VolumePaths(pod, h.config)
	if err != nil {
		return Resources{}, err
	}
	for _, local := range [...]bool{true, false} {
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			plugin := h.plugins.Find(v)
			if plugin == nil || criconfig.IsBuiltinVolume(v) != local {
				continue
			}
			if err := plugin.SetUp(ctx, pod, v, paths[v.Name]); err != nil {
				return Resources{}, err
			}
		}
	}
	return Resources{VolumePaths: paths}, nil
}
