// Package upstreamkubelet owns the KubeletConfiguration under which the
// upstream kubelet runs beside nodelet, in the end-to-end tests and in the
// benchmarks: one place for what the upstream kubelet needs on these hosts
// (cgroup v1 hybrid, cgroupfs, no systemd, swap possibly on), so the tests and
// the benchmark measure the same peer.
package upstreamkubelet

import (
	"fmt"
	"maps"

	"sigs.k8s.io/yaml"
)

// Config is what differs between one upstream kubelet and the next.
type Config struct {
	StaticPodPath   string
	PodLogsDir      string // "" the kubelet's default
	RuntimeEndpoint string // unix:// URL of the CRI socket
	// Port, ReadOnlyPort and HealthzPort are served on 127.0.0.1.
	Port, ReadOnlyPort, HealthzPort int
	// ClientCAFile turns on x509 client authentication of the kubelet
	// API (so an API server's node proxy can reach it); "" leaves it off.
	ClientCAFile string
	// Extra fields of the KubeletConfiguration, set over the defaults here.
	Extra map[string]any
}

// hostFields are what the upstream kubelet needs to run at all on a
// cgroup v1 host without systemd (shared NOTES.md): it refuses cgroup v1
// and swap by default, and node allocatable enforcement needs the QoS
// cgroups that cgroupsPerQOS: false turns off.
func hostFields() map[string]any {
	return map[string]any{
		"failCgroupV1":           false,
		"cgroupDriver":           "cgroupfs",
		"cgroupsPerQOS":          false,
		"enforceNodeAllocatable": []string{},
		"failSwapOn":             false,
	}
}

// YAML is the configuration file's content.
func (c Config) YAML() ([]byte, error) {
	if c.StaticPodPath == "" || c.RuntimeEndpoint == "" {
		return nil, fmt.Errorf("upstream kubelet config: static pod path and runtime endpoint are required")
	}
	f := hostFields()
	authn := map[string]any{
		"anonymous": map[string]any{"enabled": false},
		"webhook":   map[string]any{"enabled": false},
	}
	if c.ClientCAFile != "" {
		authn["x509"] = map[string]any{"clientCAFile": c.ClientCAFile}
	}
	maps.Copy(f, map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"staticPodPath":            c.StaticPodPath,
		"containerRuntimeEndpoint": c.RuntimeEndpoint,
		"address":                  "127.0.0.1",
		"port":                     c.Port,
		"readOnlyPort":             c.ReadOnlyPort,
		"healthzBindAddress":       "127.0.0.1",
		"healthzPort":              c.HealthzPort,
		"authentication":           authn,
		"authorization":            map[string]any{"mode": "AlwaysAllow"},
	})
	if c.PodLogsDir != "" {
		f["podLogsDir"] = c.PodLogsDir
	}
	maps.Copy(f, c.Extra)
	out, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("upstream kubelet config: %w", err)
	}
	return out, nil
}

// KubeadmDocument is the KubeletConfiguration document an operator adds to
// kubeadm's config file (`kubeadm init --config`) so that the upstream kubelet
// runs on these hosts: kubeadm stores it in the cluster's kubelet-config
// ConfigMap and writes it into every node's /var/lib/kubelet/config.yaml,
// joined nodes included (`kubeadm join` takes the kubelet's configuration from
// that ConfigMap, not from its own config file). The host fields are the same
// as YAML's but for enforceNodeAllocatable, which is [none] here: kubeadm
// drops an empty list when it rewrites the file, and the kubelet then defaults
// it to [pods], which it refuses without QoS cgroups.
func KubeadmDocument() ([]byte, error) {
	f := hostFields()
	f["apiVersion"] = "kubelet.config.k8s.io/v1beta1"
	f["kind"] = "KubeletConfiguration"
	f["enforceNodeAllocatable"] = []string{"none"}
	out, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("upstream kubelet config for kubeadm: %w", err)
	}
	return out, nil
}
