package deviceplugin

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// ApplyResponse adds a plugin's ContainerAllocateResponse to a CRI
// container config: env vars (a plugin's value replaces the container's
// own of the same name, as the runtime reads the last), mounts (one per
// container path: the plugin's replaces the pod's), device nodes (one per
// container path), annotations and CDI devices. Entries with an empty path
// or name are dropped.
func ApplyResponse(cfg *runtimeapi.ContainerConfig, r *pluginapi.ContainerAllocateResponse) {
	for k, v := range r.GetEnvs() {
		if k == "" {
			continue
		}
		replaced := false
		for _, e := range cfg.Envs {
			if e.Key == k {
				e.Value, replaced = []byte(v), true
			}
		}
		if !replaced {
			cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
		}
	}
	for _, mnt := range r.GetMounts() {
		if mnt.GetContainerPath() == "" || mnt.GetHostPath() == "" {
			continue
		}
		m := &runtimeapi.Mount{ContainerPath: mnt.ContainerPath, HostPath: mnt.HostPath, Readonly: mnt.ReadOnly}
		kept := cfg.Mounts[:0]
		for _, old := range cfg.Mounts {
			if old.ContainerPath != m.ContainerPath {
				kept = append(kept, old)
			}
		}
		cfg.Mounts = append(kept, m)
	}
	for _, d := range r.GetDevices() {
		if d.GetContainerPath() == "" || d.GetHostPath() == "" {
			continue
		}
		dev := &runtimeapi.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions}
		if dev.Permissions == "" {
			dev.Permissions = "mrw"
		}
		kept := cfg.Devices[:0]
		for _, old := range cfg.Devices {
			if old.ContainerPath != dev.ContainerPath {
				kept = append(kept, old)
			}
		}
		cfg.Devices = append(kept, dev)
	}
	for k, v := range r.GetAnnotations() {
		if k == "" {
			continue
		}
		if cfg.Annotations == nil {
			cfg.Annotations = map[string]string{}
		}
		cfg.Annotations[k] = v
	}
	for _, c := range r.GetCdiDevices() {
		if c.GetName() == "" {
			continue
		}
		dup := false
		for _, old := range cfg.CDIDevices {
			dup = dup || old.Name == c.Name
		}
		if !dup {
			cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: c.Name})
		}
	}
}
