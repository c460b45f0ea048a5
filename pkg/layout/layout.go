// Package layout owns where nodelet keeps a pod's files under its root
// directory. It is the upstream kubelet's layout, so that tools (and a
// root dir taken over from a kubelet) find things where they expect:
//
//	<root>/pods/<uid>/                                      PodDir
//	<root>/pods/<uid>/volumes/                              VolumesDir
//	<root>/pods/<uid>/volumes/kubernetes.io~<plugin>/       PluginDir
//	<root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<vol>  VolumeDir
//	<root>/pods/<uid>/volume-subpaths/<vol>/<ctr>/<index>   SubpathTarget
//	<root>/pods/<uid>/containers/<ctr>/                     ContainerDir
//	<root>/pods/<uid>/etc-hosts                             EtcHostsFile
//
// The functions only join paths: no I/O, no checks of their arguments.
package layout

import (
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// Names inside a pod directory, for code that walks one (package
// volumes/cleanup) rather than joins paths.
const (
	VolumesDirName  = "volumes"
	SubpathsDirName = "volume-subpaths"
	// PluginPrefix starts the name of each plugin directory in VolumesDirName.
	PluginPrefix = "kubernetes.io~"
)

// Volume plugin directory names, as upstream spells them after
// "kubernetes.io~".
const (
	PluginEmptyDir    = "empty-dir"
	PluginSecret      = "secret"
	PluginConfigMap   = "configmap"
	PluginDownwardAPI = "downward-api"
	PluginProjected   = "projected"
	// PluginLocalVolume holds the bind mounts of persistentVolumeClaim
	// volumes (local and hostPath PVs), named by the pod's volume name
	// (upstream names its local PV binds here by the PV's name).
	PluginLocalVolume = "local-volume"
)

// PodsDir holds one directory per pod.
func PodsDir(root string) string { return filepath.Join(root, "pods") }

// PodDir is a pod's directory; removing it removes everything of the pod.
func PodDir(root string, uid types.UID) string { return filepath.Join(PodsDir(root), string(uid)) }

// VolumesDir holds a pod's volumes, one directory per plugin.
func VolumesDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), VolumesDirName)
}

// PluginDir holds a pod's volumes of one plugin (PluginEmptyDir, ...).
func PluginDir(root string, uid types.UID, plugin string) string {
	return filepath.Join(VolumesDir(root, uid), PluginPrefix+plugin)
}

// VolumeDir is the directory backing one volume of a pod.
func VolumeDir(root string, uid types.UID, plugin, volume string) string {
	return filepath.Join(PluginDir(root, uid, plugin), volume)
}

// EmptyDir is the directory backing a pod's emptyDir volume.
func EmptyDir(root string, uid types.UID, volume string) string {
	return VolumeDir(root, uid, PluginEmptyDir, volume)
}

// SubpathsDir holds the bind mounts of a pod's subPath volume mounts.
func SubpathsDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), SubpathsDirName)
}

// SubpathTarget is where the subPath of a container's index-th volume mount
// is bound.
func SubpathTarget(root string, uid types.UID, volume, container string, index int) string {
	return filepath.Join(SubpathsDir(root, uid), volume, container, strconv.Itoa(index))
}

// ContainerDir holds a container's files (termination message files).
func ContainerDir(root string, uid types.UID, container string) string {
	return filepath.Join(PodDir(root, uid), "containers", container)
}

// EtcHostsFile is a pod's managed hosts file.
func EtcHostsFile(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "etc-hosts")
}
