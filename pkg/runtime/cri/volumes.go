package cri

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Volumes: emptyDir (on disk) and hostPath are built in; projected volumes
// have a path here but their content comes from a volume provider (package
// volumes, cluster mode only); everything else fails with ErrUnsupported
// until volume plugins exist. Creating the directories is the caller's job
// (it is I/O); this file only decides paths.

// EmptyDirPath returns the directory backing a pod's emptyDir volume, in
// the upstream layout.
func EmptyDirPath(rootDir string, uid types.UID, volume string) string {
	return filepath.Join(rootDir, "pods", string(uid), "volumes", "kubernetes.io~empty-dir", volume)
}

// ProjectedPath returns the directory backing a pod's projected volume, in
// the upstream layout.
func ProjectedPath(rootDir string, uid types.UID, volume string) string {
	return filepath.Join(rootDir, "pods", string(uid), "volumes", "kubernetes.io~projected", volume)
}

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
		if v.EmptyDir.Medium != v1.StorageMediumDefault {
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

// HostPathType returns how a hostPath volume's path must be checked or
// created before use.
func HostPathType(v *v1.Volume) v1.HostPathType {
	if v.HostPath == nil || v.HostPath.Type == nil {
		return v1.HostPathUnset
	}
	return *v.HostPath.Type
}

// VolumeHostPath returns the node path backing a supported volume.
func VolumeHostPath(pod *v1.Pod, v *v1.Volume, opts ConfigOptions) (string, error) {
	switch {
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	case v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault:
		if opts.RootDir == "" {
			return "", fmt.Errorf("volume %q: emptyDir needs a root directory, none configured", v.Name)
		}
		return EmptyDirPath(opts.RootDir, pod.UID, v.Name), nil
	case v.Projected != nil:
		// Whether the content can be made was checked before (see
		// podsync.VolumeProvider); the path is fixed either way.
		if opts.RootDir == "" {
			return "", fmt.Errorf("volume %q: projected volume needs a root directory, none configured", v.Name)
		}
		return ProjectedPath(opts.RootDir, pod.UID, v.Name), nil
	}
	return "", fmt.Errorf("volume %q: volume type %s %w", v.Name, VolumeType(v), ErrUnsupported)
}

func containerMounts(pod *v1.Pod, c *v1.Container, opts ConfigOptions) ([]*runtimeapi.Mount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	vols := make(map[string]*v1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	mounts := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %q: no such volume in the pod", vm.Name)
		}
		hostPath, err := VolumeHostPath(pod, v, opts)
		if err != nil {
			return nil, err
		}
		if vm.SubPathExpr != "" {
			return nil, fmt.Errorf("volume mount %q: subPathExpr %w", vm.Name, ErrUnsupported)
		}
		if vm.SubPath != "" {
			// A subPath must stay inside its volume.
			if filepath.IsAbs(vm.SubPath) || !filepath.IsLocal(vm.SubPath) {
				return nil, fmt.Errorf("volume mount %q: subPath %q leaves the volume", vm.Name, vm.SubPath)
			}
			hostPath = filepath.Join(hostPath, vm.SubPath)
		}
		m := &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			// Projected content belongs to nodelet, which rewrites it
			// (token refresh): a container never writes it, whatever
			// the mount says, as upstream.
			Readonly: vm.ReadOnly || v.Projected != nil,
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
	return mounts, nil
}
