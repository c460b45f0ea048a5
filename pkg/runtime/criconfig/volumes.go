package criconfig

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/layout"
)

// Volumes: emptyDir (on disk) and hostPath are built in; projected volumes
// have a path here but their content comes from a volume provider (package
// volumes, cluster mode only); everything else fails with ErrUnsupported
// until volume plugins exist. Creating the directories is the caller's job
// (it is I/O); this file only decides paths.

// APIVolumePath returns the directory backing a volume whose content comes
// from the API (configMap, secret, downwardAPI, projected), in the upstream
// layout: <root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<volume>. ok is
// false for other volume types.
func APIVolumePath(rootDir string, uid types.UID, v *v1.Volume) (path string, ok bool) {
	plugin := APIVolumePlugin(v)
	if plugin == "" {
		return "", false
	}
	return layout.VolumeDir(rootDir, uid, plugin, v.Name), true
}

// APIVolumePlugin names the upstream plugin directory of a volume with
// content from the API ("secret", "configmap", "downward-api",
// "projected"), or "" for any other volume.
func APIVolumePlugin(v *v1.Volume) string {
	switch {
	case v.Secret != nil:
		return layout.PluginSecret
	case v.ConfigMap != nil:
		return layout.PluginConfigMap
	case v.DownwardAPI != nil:
		return layout.PluginDownwardAPI
	case v.Projected != nil:
		return layout.PluginProjected
	}
	return ""
}

// AllContainers returns the pod's init containers, then its containers,
// then its ephemeral containers (as Containers pointing into the spec).
func AllContainers(pod *v1.Pod) []*v1.Container { return allContainers(pod) }

// CheckVolumes fails for the first volume nodelet cannot provide by itself
// (CheckVolume), naming its type: `volume "x": volume type projected not
// supported yet`.
func CheckVolumes(pod *v1.Pod) error {
	for i := range pod.Spec.Volumes {
		if err := CheckVolume(&pod.Spec.Volumes[i]); err != nil {
			return err
		}
	}
	return nil
}

// IsBuiltinVolume reports whether v is of a type nodelet makes by itself
// (emptyDir, hostPath), as opposed to one a volume provider makes or none.
func IsBuiltinVolume(v *v1.Volume) bool {
	return v.HostPath != nil || v.EmptyDir != nil
}

// CheckVolume fails for a volume nodelet cannot make by itself, wrapping
// ErrUnsupported.
func CheckVolume(v *v1.Volume) error {
	switch {
	case v.HostPath != nil:
	case v.EmptyDir != nil:
		if m := v.EmptyDir.Medium; m != v1.StorageMediumDefault && m != v1.StorageMediumMemory {
			return fmt.Errorf("volume %q: emptyDir medium %q %w", v.Name, v.EmptyDir.Medium, ErrUnsupported)
		}
	default:
		return fmt.Errorf("volume %q: volume type %s %w", v.Name, VolumeType(v), ErrUnsupported)
	}
	return nil
}

// VolumeType names the source of a volume as the API spells it
// ("emptyDir", "projected", ...), or "unknown".
func VolumeType(v *v1.Volume) string {
	rv := reflect.ValueOf(v.VolumeSource)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "unknown"
}

// VolumeHostPath returns the node path backing a supported volume.
func VolumeHostPath(pod *v1.Pod, v *v1.Volume, opts ConfigOptions) (string, error) {
	switch {
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	case v.EmptyDir != nil && (v.EmptyDir.Medium == v1.StorageMediumDefault || v.EmptyDir.Medium == v1.StorageMediumMemory):
		if opts.RootDir == "" {
			return "", fmt.Errorf("volume %q: emptyDir needs a root directory, none configured", v.Name)
		}
		return layout.EmptyDir(opts.RootDir, pod.UID, v.Name), nil
	case APIVolumePlugin(v) != "":
		// Whether the content can be made was checked before (see
		// podsync.VolumeProvider); the path is fixed either way.
		if opts.RootDir == "" {
			return "", fmt.Errorf("volume %q: %s volume needs a root directory, none configured", v.Name, VolumeType(v))
		}
		path, _ := APIVolumePath(opts.RootDir, pod.UID, v)
		return path, nil
	case v.PersistentVolumeClaim != nil:
		// The claim's volume is bind-mounted here by its plugin (package
		// volumes), whatever the PV: the path does not depend on the API.
		if opts.RootDir == "" {
			return "", fmt.Errorf("volume %q: persistentVolumeClaim volume needs a root directory, none configured", v.Name)
		}
		return layout.VolumeDir(opts.RootDir, pod.UID, layout.PluginLocalVolume, v.Name), nil
	}
	return "", fmt.Errorf("volume %q: volume type %s %w", v.Name, VolumeType(v), ErrUnsupported)
}

// VolumePaths returns the node path backing each of the pod's volumes (see
// VolumeHostPath), by volume name: what the volume step of the pod-resource
// pipeline prepares and container mounts refer to.
func VolumePaths(pod *v1.Pod, opts ConfigOptions) (map[string]string, error) {
	paths := make(map[string]string, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		path, err := VolumeHostPath(pod, v, opts)
		if err != nil {
			return nil, err
		}
		paths[v.Name] = path
	}
	return paths, nil
}

// SubpathMount is a volume mount with a subPath (or subPathExpr), which the
// runtime may mount only once it has been bound safely to Target (package
// volumes/subpath): the subPath lies in a volume the pod can write, so the path
// itself cannot be trusted.
type SubpathMount struct {
	// Mount names the volume mount, for errors.
	Mount string
	// Volume is the volume's name in the pod.
	Volume string
	// VolumePath is the node path backing the volume.
	VolumePath string
	// Path is the subPath, expanded and checked to be relative without "..".
	Path string
	// Target is the node-owned path to bind it to; the CRI mount's host path.
	Target string
}

// subPathOf returns a mount's subPath, with subPathExpr expanded against the
// container's environment, checked as the API validation checks it: relative
// and without ".." components. "" means the whole volume.
func subPathOf(vm *v1.VolumeMount, lookup func(string) (string, bool)) (string, error) {
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		if vm.SubPath != "" {
			return "", fmt.Errorf("volume mount %q: subPath and subPathExpr are mutually exclusive", vm.Name)
		}
		sub = expand(vm.SubPathExpr, lookup)
		if sub == "" {
			return "", fmt.Errorf("volume mount %q: subPathExpr %q expands to an empty path", vm.Name, vm.SubPathExpr)
		}
	}
	if sub == "" {
		return "", nil
	}
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("volume mount %q: subPath %q must be a relative path", vm.Name, sub)
	}
	for _, c := range strings.Split(sub, "/") {
		if c == ".." {
			return "", fmt.Errorf("volume mount %q: subPath %q must not contain '..'", vm.Name, sub)
		}
	}
	return sub, nil
}

// containerMounts returns the container's volume mounts, given the node
// paths of the pod's volumes, and the subPath binds the caller must make
// before the runtime mounts their targets.
func containerMounts(pod *v1.Pod, c *v1.Container, opts ConfigOptions, paths map[string]string, lookup func(string) (string, bool)) ([]*runtimeapi.Mount, []SubpathMount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil, nil
	}
	vols := make(map[string]*v1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	mounts := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	var binds []SubpathMount
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		v, ok := vols[vm.Name]
		if !ok {
			return nil, nil, fmt.Errorf("volume mount %q: no such volume in the pod", vm.Name)
		}
		hostPath, ok := paths[v.Name]
		if !ok {
			return nil, nil, fmt.Errorf("volume mount %q: volume not prepared", vm.Name)
		}
		sub, err := subPathOf(vm, lookup)
		if err != nil {
			return nil, nil, err
		}
		if sub != "" {
			if opts.RootDir == "" {
				return nil, nil, fmt.Errorf("volume mount %q: subPath needs a root directory, none configured", vm.Name)
			}
			sm := SubpathMount{
				Mount:      vm.Name,
				Volume:     v.Name,
				VolumePath: hostPath,
				Path:       sub,
				Target:     layout.SubpathTarget(opts.RootDir, pod.UID, v.Name, c.Name, i),
			}
			binds = append(binds, sm)
			hostPath = sm.Target
		}
		m := &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			// Content from the API belongs to nodelet, which rewrites
			// it (token refresh, updates): a container never writes it,
			// whatever the mount says, as upstream.
			Readonly: vm.ReadOnly || APIVolumePlugin(v) != "" ||
				(v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly),
		}
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case v1.MountPropagationHostToContainer:
				m.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case v1.MountPropagationBidirectional:
				m.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		mounts = append(mounts, m)
	}
	return mounts, binds, nil
}
