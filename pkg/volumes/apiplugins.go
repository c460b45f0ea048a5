package volumes

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/tmpfs"
)

// apiPlugin is the plugin of one volume type with content from the API
// server: configMap, secret, downwardAPI or projected. The four differ in
// which field they read and where their volumes live; the rendering,
// tracking and refreshing are Content's, shared, since one object change
// or token renewal rewrites every volume of a pod that shows it.
type apiPlugin struct {
	name    string
	dir     string // the plugin directory, layout.Plugin*
	has     func(*v1.Volume) bool
	rootDir string
	content Content
}

var _ Keeper = apiPlugin{}

func apiPlugins(rootDir string, content Content) []Plugin {
	return []Plugin{
		apiPlugin{"configMap", layout.PluginConfigMap, func(v *v1.Volume) bool { return v.ConfigMap != nil }, rootDir, content},
		apiPlugin{"secret", layout.PluginSecret, func(v *v1.Volume) bool { return v.Secret != nil }, rootDir, content},
		apiPlugin{"downwardAPI", layout.PluginDownwardAPI, func(v *v1.Volume) bool { return v.DownwardAPI != nil }, rootDir, content},
		apiPlugin{"projected", layout.PluginProjected, func(v *v1.Volume) bool { return v.Projected != nil }, rootDir, content},
	}
}

func (p apiPlugin) Name() string                 { return p.name }
func (p apiPlugin) CanSupport(v *v1.Volume) bool { return p.has(v) }

func (p apiPlugin) Check(pod *v1.Pod, v *v1.Volume) error {
	if err := p.content.Check(pod, v); err != nil {
		return fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return nil
}

// SetUp has the content written: all of the pod's volumes with API
// content are rendered together, so the first of them writes them all and
// the others find them current. Its error is upstream's "MountVolume.SetUp
// failed for volume ...", which names the volume.
func (p apiPlugin) SetUp(ctx context.Context, pod *v1.Pod, _ *v1.Volume, _ string) error {
	return p.content.Prepare(ctx, pod)
}

func (p apiPlugin) KeepCurrent(ctx context.Context, pod *v1.Pod) error {
	return p.content.Prepare(ctx, pod)
}

// TearDown unmounts the tmpfs of the pod's volumes, so that secrets do not
// stay in memory until the directory is removed. The content, shared, was
// told to forget the pod before (Registry.TearDown).
func (p apiPlugin) TearDown(_ context.Context, uid types.UID) error {
	return tmpfs.UnmountPlugin(p.rootDir, string(uid), p.dir)
}
