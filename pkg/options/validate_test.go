package options

import (
	"strings"
	"testing"
	"time"

	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"
)

func validOptions() *Options {
	o := Defaults()
	o.Hostname = "node-a"
	o.ImageServiceEndpoint = o.ContainerRuntimeEndpoint
	return o
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Options)
		want   []string // substrings; none means valid
	}{
		{"defaults", func(*Options) {}, nil},
		{"allowed unsafe sysctls", func(o *Options) { o.AllowedUnsafeSysctls = []string{"net.core.somaxconn", "net.ipv6.*", "kernel.msg*"} }, nil},
		{"node-level unsafe sysctl", func(o *Options) { o.AllowedUnsafeSysctls = []string{"vm.swappiness"} },
			[]string{`--allowed-unsafe-sysctls: the sysctls "vm.swappiness" are not known to be namespaced`}},
		{"bad sysctl pattern", func(o *Options) { o.AllowedUnsafeSysctls = []string{"net.*.x"} },
			[]string{`--allowed-unsafe-sysctls: sysctl "net.*.x" must have at most 253 characters`}},
		{"gc low above high", func(o *Options) { o.ImageGCLowThresholdPercent, o.ImageGCHighThresholdPercent = 85, 80 },
			[]string{"--image-gc-low-threshold (85) must be less than --image-gc-high-threshold (80)"}},
		{"gc out of range", func(o *Options) { o.ImageGCHighThresholdPercent = 101 },
			[]string{"--image-gc-high-threshold (101) must be between 0 and 100"}},
		{"gc negative low", func(o *Options) { o.ImageGCLowThresholdPercent = -1 },
			[]string{"--image-gc-low-threshold (-1) must be between 0 and 100"}},
		{"ports", func(o *Options) { o.Port, o.HealthzPort, o.ReadOnlyPort = 0, 70000, -1 }, []string{
			"--port (0) must be between 1 and 65535",
			"--healthz-port (70000) must be between 0 and 65535",
			"--read-only-port (-1) must be between 0 and 65535",
		}},
		{"bind addresses", func(o *Options) { o.Address, o.HealthzBindAddress = "localhost", "" }, []string{
			`--address ("localhost") must be an IP address`,
			`--healthz-bind-address ("") must be an IP address`,
		}},
		{"frequencies", func(o *Options) {
			o.FileCheckFrequency, o.HTTPCheckFrequency, o.SyncFrequency, o.RelistPeriod, o.NodeStatusUpdateFrequency = 0, -time.Second, 0, 0, 0
		}, []string{
			"--file-check-frequency (0s) must be greater than 0",
			"--http-check-frequency (-1s) must be greater than 0",
			"--sync-frequency (0s) must be greater than 0",
			"--relist-period (0s) must be greater than 0",
			"--node-status-update-frequency (0s) must be greater than 0",
		}},
		{"lease and pods", func(o *Options) { o.NodeLeaseDurationSeconds, o.MaxPods = 0, -1 }, []string{
			"--node-lease-duration-seconds (0) must be greater than 0",
			"--max-pods (-1) must not be negative",
		}},
		{"manifest url scheme", func(o *Options) { o.StaticPodURL = "ftp://x/pods" }, []string{`--manifest-url ("ftp://x/pods") must be an http:// or https:// URL`}},
		{"manifest url unparseable", func(o *Options) { o.StaticPodURL = "http://[::1" }, []string{`--manifest-url ("http://[::1") is not a valid URL`}},
		{"manifest url ok", func(o *Options) { o.StaticPodURL = "https://example.com/pods.yaml" }, nil},
		{"tracing sampling rate", func(o *Options) {
			o.Tracing = &tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr.To[int32](2000000)}
		}, []string{"tracing.samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be less than or equal to one million"}},
		{"tracing endpoint ok", func(o *Options) { o.Tracing = &tracingapi.TracingConfiguration{Endpoint: ptr.To("collector:4317")} }, nil},
		{"certificates standalone", func(o *Options) {
			o.BootstrapKubeconfigPath, o.RotateCertificates, o.ServerTLSBootstrap = "/etc/kubernetes/bootstrap-kubelet.conf", true, true
		}, []string{
			"--bootstrap-kubeconfig needs --kubeconfig",
			"--rotate-certificates (rotateCertificates) needs --kubeconfig",
			"--rotate-server-certificates (serverTLSBootstrap) needs --kubeconfig",
		}},
		{"certificates in a cluster", func(o *Options) {
			o.KubeconfigPath, o.BootstrapKubeconfigPath, o.RotateCertificates, o.ServerTLSBootstrap = "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/bootstrap-kubelet.conf", true, true
		}, nil},
		{"runtime endpoint plain path", func(o *Options) { o.ContainerRuntimeEndpoint = "/run/containerd/containerd.sock" },
			[]string{`--container-runtime-endpoint ("/run/containerd/containerd.sock") must be a unix:// socket URL`}},
		{"image endpoint tcp", func(o *Options) { o.ImageServiceEndpoint = "tcp://1.2.3.4:1" },
			[]string{`--image-service-endpoint ("tcp://1.2.3.4:1") must be a unix:// socket URL`}},
		{"log rotation", func(o *Options) { o.ContainerLogMaxSize, o.ContainerLogMaxFiles = "ten", 1 }, []string{
			`--container-log-max-size ("ten") must be a positive quantity`,
			"--container-log-max-files (1) must be at least 2",
		}},
		{"authorization mode", func(o *Options) { o.AuthorizationMode = "RBAC" }, []string{`--authorization-mode ("RBAC") must be AlwaysAllow or Webhook`}},
		{"tls half set", func(o *Options) { o.TLSCertFile = "/c" }, []string{"--tls-cert-file and --tls-private-key-file must be set together"}},
		{"node ip", func(o *Options) { o.NodeIP = "10.0.0.1,banana" }, []string{`--node-ip entry "banana" is not an IP address`}},
		{"node ip two v4", func(o *Options) { o.NodeIP = "10.0.0.1,10.0.0.2" }, []string{"must hold one IPv4 and one IPv6"}},
		{"node ip dual stack", func(o *Options) { o.NodeIP = "10.0.0.1, fd00::1" }, nil},
		{"cluster dns", func(o *Options) { o.ClusterDNS = []string{"10.96.0.10", "dns"} }, []string{`--cluster-dns entry "dns" is not an IP address`}},
		{"node labels", func(o *Options) {
			o.NodeLabels = map[string]string{
				"node-role.kubernetes.io/worker":      "",
				"node-restriction.kubernetes.io/zone": "a",
				"k8s.io/anything":                     "x",
				"sub.k8s.io/anything":                 "x",
				"node.kubernetes.io/role":             "ok",
				"kubelet.kubernetes.io/x":             "ok",
				"a.kubelet.kubernetes.io/x":           "ok",
				"topology.kubernetes.io/zone":         "ok",
				"beta.kubernetes.io/arch":             "amd64",
				"kubernetes.io/hostname":              "ok",
				"example.com/team":                    "a b",
				"bad key!":                            "x",
			}
		}, []string{
			`--node-labels key "bad key!" is invalid`,
			`--node-labels value "a b" of "example.com/team" is invalid`,
			`--node-labels key "k8s.io/anything" is in the kubernetes.io or k8s.io namespace`,
			`--node-labels key "node-restriction.kubernetes.io/zone" is in the kubernetes.io or k8s.io namespace but not one a node may set (allowed: the kubelet.kubernetes.io and node.kubernetes.io namespaces and the well-known topology, instance-type, os and arch labels); that namespace exists so that only administrators can set its labels`,
			`--node-labels key "node-role.kubernetes.io/worker" is in the kubernetes.io or k8s.io namespace but not one a node may set (allowed: the kubelet.kubernetes.io and node.kubernetes.io namespaces and the well-known topology, instance-type, os and arch labels); a node's role is set by an administrator (kubectl label node NAME node-role.kubernetes.io/worker=)`,
			`--node-labels key "sub.k8s.io/anything" is in the kubernetes.io or k8s.io namespace`,
		}},
		{"cloud provider external", func(o *Options) { o.CloudProvider = "external" }, nil},
		{"cloud provider built in", func(o *Options) { o.CloudProvider = "aws" }, []string{
			`--cloud-provider ("aws") must be empty or "external"`,
		}},
		{"hostname", func(o *Options) { o.Hostname = "under_score" }, []string{`node name "under_score"`}},
		{"empty essentials", func(o *Options) { o.RootDir, o.PodInfraContainerImage = "", "" }, []string{
			"--root-dir must not be empty",
			"--pod-infra-container-image must not be empty",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions()
			tc.mutate(o)
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if got := strings.Count(err.Error(), "\n") + 1; got < len(tc.want) {
				t.Errorf("error has %d lines, want at least %d (one per problem)", got, len(tc.want))
			}
		})
	}
}

func TestResolveReportsValidationAndKeepsWarnings(t *testing.T) {
	stubHostname(t, "host")
	_, warnings, err := resolveArgs(t, "", "--image-gc-low-threshold=85", "--image-gc-high-threshold=80", "--hairpin-mode=none")
	if err == nil || !strings.Contains(err.Error(), "--image-gc-low-threshold (85) must be less than --image-gc-high-threshold (80)") {
		t.Errorf("err = %v", err)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings = %q, want the --hairpin-mode one", warnings)
	}
}

func TestHostname(t *testing.T) {
	stubHostname(t, " My-Host \n")
	tests := []struct{ override, want string }{
		{"", "my-host"},
		{"Worker-1", "worker-1"},
	}
	for _, tc := range tests {
		got, err := hostname(tc.override)
		if err != nil || got != tc.want {
			t.Errorf("hostname(%q) = %q, %v; want %q", tc.override, got, err, tc.want)
		}
	}
	stubHostname(t, "")
	if _, err := hostname(""); err == nil {
		t.Error("empty hostname: want error")
	}
}

func TestValidateCgroups(t *testing.T) {
	stubHostname(t, "host")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cgroup-driver=sysd"}, `--cgroup-driver ("sysd") must be cgroupfs or systemd`},
		{[]string{"--cgroup-root=kubelet"}, `--cgroup-root ("kubelet") must be an absolute cgroup path`},
		{[]string{"--cgroups-per-qos=false", "--pod-max-pids=100"}, "--pod-max-pids (podPidsLimit) 100 needs --cgroups-per-qos"},
		{[]string{"--pod-max-pids=-5"}, "--pod-max-pids (-5) must be -1 (unlimited) or more"},
		{[]string{"--pod-max-pids=100", "--cgroup-root=/a", "--cgroup-driver=systemd"}, ""},
		{[]string{"--cgroups-per-qos=false", "--pod-max-pids=-1", "--enforce-node-allocatable="}, ""},
	}
	for _, tc := range tests {
		_, _, err := resolveArgs(t, "", tc.args...)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	o, _, err := resolveArgs(t, "")
	if err != nil || !o.CgroupsPerQOS || o.CgroupDriver != "cgroupfs" || o.CgroupRoot != "" || o.PodPidsLimit != -1 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}
