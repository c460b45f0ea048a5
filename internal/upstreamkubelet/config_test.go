package upstreamkubelet

import (
	"testing"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

func TestYAML(t *testing.T) {
	out, err := Config{
		StaticPodPath: "/m", PodLogsDir: "/l", RuntimeEndpoint: "unix:///c.sock",
		Port: 1, ReadOnlyPort: 2, HealthzPort: 3, ClientCAFile: "/ca.crt",
		Extra: map[string]any{"imageGCHighThresholdPercent": 100},
	}.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var cfg kubeletconfig.KubeletConfiguration
	if err := yaml.UnmarshalStrict(out, &cfg); err != nil {
		t.Fatalf("not a KubeletConfiguration: %v\n%s", err, out)
	}
	if cfg.Kind != "KubeletConfiguration" || cfg.StaticPodPath != "/m" || cfg.PodLogsDir != "/l" ||
		cfg.ContainerRuntimeEndpoint != "unix:///c.sock" || cfg.Port != 1 || cfg.ReadOnlyPort != 2 ||
		*cfg.HealthzPort != 3 || cfg.Authentication.X509.ClientCAFile != "/ca.crt" ||
		*cfg.ImageGCHighThresholdPercent != 100 {
		t.Errorf("fields lost:\n%s", out)
	}
	// The upstream kubelet defaults an absent list to ["pods"], which it
	// refuses without QoS cgroups: the empty list must be written.
	if cfg.EnforceNodeAllocatable == nil || len(cfg.EnforceNodeAllocatable) != 0 || *cfg.CgroupsPerQOS || *cfg.FailCgroupV1 {
		t.Errorf("host fields wrong:\n%s", out)
	}
	if _, err := (Config{}).YAML(); err == nil {
		t.Error("a config without static pod path and endpoint must be refused")
	}
}

func TestKubeadmDocument(t *testing.T) {
	out, err := KubeadmDocument()
	if err != nil {
		t.Fatal(err)
	}
	var cfg kubeletconfig.KubeletConfiguration
	if err := yaml.UnmarshalStrict(out, &cfg); err != nil {
		t.Fatalf("not a KubeletConfiguration: %v\n%s", err, out)
	}
	if cfg.Kind != "KubeletConfiguration" || cfg.APIVersion != "kubelet.config.k8s.io/v1beta1" {
		t.Errorf("type meta wrong:\n%s", out)
	}
	// kubeadm keeps [none] where it would drop [].
	if len(cfg.EnforceNodeAllocatable) != 1 || cfg.EnforceNodeAllocatable[0] != "none" ||
		*cfg.CgroupsPerQOS || *cfg.FailCgroupV1 || *cfg.FailSwapOn || cfg.CgroupDriver != "cgroupfs" {
		t.Errorf("host fields wrong:\n%s", out)
	}
	// Node-specific fields stay out of a cluster-wide document.
	if cfg.StaticPodPath != "" || cfg.ContainerRuntimeEndpoint != "" {
		t.Errorf("node-specific fields in the cluster-wide document:\n%s", out)
	}
}
