// Package deviceplugin is nodelet's device plugin manager: the v1beta1
// Registration service on <root-dir>/device-plugins/kubelet.sock, a
// ListAndWatch stream per registered plugin keeping its healthy and
// unhealthy devices, the extended resources they give the node (capacity:
// every device; allocatable: the healthy ones), the devices reserved for a
// pod's containers at admission (checkpointed, so a restart neither loses
// nor double-assigns one), and the plugin's Allocate response applied to
// the CRI container config at container start.
//
// Which devices are free and which to pick are pure functions (decide.go);
// the Manager does the I/O around them.
package deviceplugin
