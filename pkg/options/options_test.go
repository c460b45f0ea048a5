package options

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"
)

const header = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n"

func stubHostname(t *testing.T, name string) {
	t.Helper()
	old := osHostname
	osHostname = func() (string, error) { return name, nil }
	t.Cleanup(func() { osHostname = old })
}

// resolveArgs parses args and an optional config file body the way main does.
func resolveArgs(t *testing.T, file string, args ...string) (*Options, []string, error) {
	t.Helper()
	fs := NewFlagSet("nodelet")
	if file != "" {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"--config", path}, args...)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return Load(fs)
}

func TestResolveFlagsOnlyGivesDefaults(t *testing.T) {
	stubHostname(t, "Node-A")
	got, warnings, err := resolveArgs(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
	want := Defaults()
	want.Hostname = "node-a"
	want.CertDir = "/var/lib/kubelet/pki"
	want.ImageServiceEndpoint = want.ContainerRuntimeEndpoint
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolvePrecedence(t *testing.T) {
	stubHostname(t, "host")
	tests := []struct {
		name  string
		file  string // config body without kind/apiVersion; "" for no --config
		args  []string
		check func(*Options) any
		want  any
	}{
		{"default", "", nil, func(o *Options) any { return o.SyncFrequency }, time.Minute},
		{"file over default", "syncFrequency: 30s", nil, func(o *Options) any { return o.SyncFrequency }, 30 * time.Second},
		{"flag over file", "syncFrequency: 30s", []string{"--sync-frequency=45s"}, func(o *Options) any { return o.SyncFrequency }, 45 * time.Second},
		{"flag over default", "", []string{"--sync-frequency=45s"}, func(o *Options) any { return o.SyncFrequency }, 45 * time.Second},
		{"flag equal to default still overrides file", "maxPods: 20", []string{"--max-pods=110"}, func(o *Options) any { return o.MaxPods }, 110},
		{"underscore flag name", "", []string{"--pod_manifest_path=/etc/m"}, func(o *Options) any { return o.StaticPodPath }, "/etc/m"},
		{"seccomp default flag", "", []string{"--seccomp-default"}, func(o *Options) any { return o.SeccompDefault }, true},
		{"seccomp default flag over file", "seccompDefault: true", []string{"--seccomp-default=false"}, func(o *Options) any { return o.SeccompDefault }, false},
		{"unsafe sysctls flag", "", []string{"--allowed-unsafe-sysctls=net.core.somaxconn,kernel.msg*"},
			func(o *Options) any { return o.AllowedUnsafeSysctls }, []string{"net.core.somaxconn", "kernel.msg*"}},
		{"unsafe sysctls flag over file", "allowedUnsafeSysctls: [net.core.somaxconn]", []string{"--allowed-unsafe-sysctls=kernel.sem"},
			func(o *Options) any { return o.AllowedUnsafeSysctls }, []string{"kernel.sem"}},

		{"authorization flags only", "", nil, func(o *Options) any { return o.AuthorizationMode }, "AlwaysAllow"},
		{"authorization file default", "port: 10250", nil, func(o *Options) any { return o.AuthorizationMode }, "Webhook"},
		{"authorization flag over file default", "port: 10250", []string{"--authorization-mode=AlwaysAllow"}, func(o *Options) any { return o.AuthorizationMode }, "AlwaysAllow"},
		{"webhook authn flags only", "", nil, func(o *Options) any { return o.WebhookAuthentication }, false},
		{"webhook authn file default", "port: 10250", nil, func(o *Options) any { return o.WebhookAuthentication }, true},
		{"webhook authn file false", "authentication: {webhook: {enabled: false}}", nil, func(o *Options) any { return o.WebhookAuthentication }, false},
		{"anonymous file", "authentication: {anonymous: {enabled: true}}", nil, func(o *Options) any { return o.AnonymousAuth }, true},

		{"healthz port 0 in file disables", "healthzPort: 0", nil, func(o *Options) any { return o.HealthzAddr() }, ""},
		{"healthz port flag over file", "healthzPort: 0", []string{"--healthz-port=1234"}, func(o *Options) any { return o.HealthzAddr() }, "127.0.0.1:1234"},
		{"read-only port from file", "readOnlyPort: 10255\naddress: 10.0.0.1", nil, func(o *Options) any { return o.ReadOnlyAddr() }, "10.0.0.1:10255"},
		{"resolvConf empty in file disables", `resolvConf: ""`, nil, func(o *Options) any { return o.ResolvConf }, ""},
		{"registerNode false in file", "registerNode: false", nil, func(o *Options) any { return o.RegisterNode }, false},
		{"register-node flag over file", "registerNode: false", []string{"--register-node"}, func(o *Options) any { return o.RegisterNode }, true},
		{"gc threshold 0 from file", "imageGCLowThresholdPercent: 0", nil, func(o *Options) any { return o.ImageGCLowThresholdPercent }, 0},
		{"log verbosity from file", "logging: {verbosity: 4}", nil, func(o *Options) any { return o.Verbosity }, 4},

		{"image endpoint follows runtime endpoint", "containerRuntimeEndpoint: unix:///run/crio.sock", nil,
			func(o *Options) any { return o.ImageServiceEndpoint }, "unix:///run/crio.sock"},
		{"image endpoint flag", "", []string{"--image-service-endpoint=unix:///run/img.sock"},
			func(o *Options) any { return o.ImageServiceEndpoint }, "unix:///run/img.sock"},
		{"hostname override lowercased", "", []string{"--hostname-override=Worker-1"}, func(o *Options) any { return o.Hostname }, "worker-1"},
		{"cluster dns flag list", "clusterDNS: [10.0.0.10]", []string{"--cluster-dns=10.96.0.10,10.96.0.11"},
			func(o *Options) any { return o.ClusterDNS }, []string{"10.96.0.10", "10.96.0.11"}},
		{"node labels", "", []string{"--node-labels=a=1,b=2", "--node-labels=node.kubernetes.io/role=edge"},
			func(o *Options) any { return o.NodeLabels }, map[string]string{"a": "1", "b": "2", "node.kubernetes.io/role": "edge"}},
		{"headers flag replaces file", "staticPodURL: http://m\nstaticPodURLHeader: {a: [x]}", []string{"--manifest-url-header=b:y"},
			func(o *Options) any { return o.StaticPodURLHeader }, map[string][]string{"b": {"y"}}},
		{"headers from file", "staticPodURL: http://m\nstaticPodURLHeader: {a: [x, z]}", nil,
			func(o *Options) any { return o.StaticPodURLHeader }, map[string][]string{"a": {"x", "z"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = header + tc.file
			}
			o, _, err := resolveArgs(t, file, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.check(o); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// allSupportedYAML sets every supported config field to a non-default value.
const allSupportedYAML = header + `
enableServer: false
staticPodPath: /etc/nodelet/manifests
podLogsDir: /var/log/nodelet-pods
syncFrequency: 2m
fileCheckFrequency: 5s
httpCheckFrequency: 6s
staticPodURL: https://example.com/pods
staticPodURLHeader: {X-Token: [abc]}
address: 10.1.2.3
port: 11250
readOnlyPort: 10255
tlsCertFile: /pki/tls.crt
tlsMinVersion: VersionTLS12
tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
registerWithTaints:
- {key: dedicated, value: infra, effect: NoSchedule}
tlsPrivateKeyFile: /pki/tls.key
enableDebuggingHandlers: false
enableProfilingHandler: false
enableSystemLogHandler: false
enableSystemLogQuery: true
enableDebugFlagsHandler: false
streamingConnectionIdleTimeout: 5m
authentication:
  x509: {clientCAFile: /pki/ca.crt}
  webhook: {enabled: false, cacheTTL: 20s}
  anonymous: {enabled: true}
authorization: {mode: AlwaysAllow, webhook: {cacheAuthorizedTTL: 1m, cacheUnauthorizedTTL: 5s}}
healthzPort: 11248
healthzBindAddress: 0.0.0.0
clusterDomain: cluster.local
clusterDNS: [10.96.0.10]
nodeStatusUpdateFrequency: 20s
nodeLeaseDurationSeconds: 60
imageMinimumGCAge: 5m
imageGCHighThresholdPercent: 70
imageGCLowThresholdPercent: 60
maxPods: 50
resolvConf: /run/systemd/resolve/resolv.conf
seccompDefault: true
allowedUnsafeSysctls: ["net.core.somaxconn", "kernel.msg*"]
containerLogMaxSize: 20Mi
containerLogMaxFiles: 3
logging: {verbosity: 2}
registerNode: false
providerID: aws:///eu-west-1a/i-0abc
containerRuntimeEndpoint: unix:///run/crio/crio.sock
imageServiceEndpoint: unix:///run/crio/image.sock
rotateCertificates: true
serverTLSBootstrap: true
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 10s
cgroupsPerQOS: false
cgroupRoot: /node
cgroupDriver: systemd
podPidsLimit: 0
kubeReserved: {cpu: 100m, memory: 1Gi}
systemReserved: {pid: "1000"}
evictionHard: {memory.available: 200Mi}
enforceNodeAllocatable: [none]
kubeReservedCgroup: /kube
systemReservedCgroup: /system
tracing: {endpoint: "otel.example:4317", samplingRatePerMillion: 1000}
`

func TestEverySupportedFieldIsApplied(t *testing.T) {
	stubHostname(t, "host")
	// Certificate rotation needs a cluster, so the sample has a kubeconfig.
	o, warnings, err := resolveArgs(t, allSupportedYAML, "--kubeconfig=/etc/kubernetes/kubelet.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
	want := &Options{
		ConfigFile:                      o.ConfigFile,
		KubeconfigPath:                  "/etc/kubernetes/kubelet.conf",
		RootDir:                         "/var/lib/kubelet",
		CertDir:                         "/var/lib/kubelet/pki",
		RotateCertificates:              true,
		ServerTLSBootstrap:              true,
		Hostname:                        "host",
		StaticPodPath:                   "/etc/nodelet/manifests",
		StaticPodURL:                    "https://example.com/pods",
		StaticPodURLHeader:              map[string][]string{"X-Token": {"abc"}},
		FileCheckFrequency:              5 * time.Second,
		HTTPCheckFrequency:              6 * time.Second,
		SyncFrequency:                   2 * time.Minute,
		RelistPeriod:                    time.Second,
		ContainerRuntimeEndpoint:        "unix:///run/crio/crio.sock",
		ImageServiceEndpoint:            "unix:///run/crio/image.sock",
		PodInfraContainerImage:          "registry.k8s.io/pause:3.10",
		PodLogsDir:                      "/var/log/nodelet-pods",
		ContainerLogMaxSize:             "20Mi",
		ContainerLogMaxFiles:            3,
		ImageGCHighThresholdPercent:     70,
		ImageGCLowThresholdPercent:      60,
		ImageMinimumGCAge:               5 * time.Minute,
		MaxPods:                         50,
		ClusterDNS:                      []string{"10.96.0.10"},
		ClusterDomain:                   "cluster.local",
		ResolvConf:                      "/run/systemd/resolve/resolv.conf",
		SeccompDefault:                  true,
		AllowedUnsafeSysctls:            []string{"net.core.somaxconn", "kernel.msg*"},
		RegisterNode:                    false,
		ProviderID:                      "aws:///eu-west-1a/i-0abc",
		NodeStatusUpdateFrequency:       20 * time.Second,
		NodeLeaseDurationSeconds:        60,
		HealthzPort:                     11248,
		HealthzBindAddress:              "0.0.0.0",
		ReadOnlyPort:                    10255,
		EnableServer:                    false,
		Address:                         "10.1.2.3",
		Port:                            11250,
		TLSCertFile:                     "/pki/tls.crt",
		TLSPrivateKeyFile:               "/pki/tls.key",
		ClientCAFile:                    "/pki/ca.crt",
		AnonymousAuth:                   true,
		WebhookAuthentication:           false,
		AuthorizationMode:               "AlwaysAllow",
		TLSMinVersion:                   "VersionTLS12",
		TLSCipherSuites:                 []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		RegisterWithTaints:              []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}},
		WebhookTokenCacheTTL:            20 * time.Second,
		AuthzCacheAuthorizedTTL:         time.Minute,
		AuthzCacheUnauthorizedTTL:       5 * time.Second,
		EnableDebuggingHandlers:         false,
		EnableProfilingHandler:          false,
		EnableSystemLogHandler:          false,
		EnableSystemLogQuery:            true,
		EnableDebugFlagsHandler:         false,
		RegisterSchedulable:             true,
		StreamingConnectionIdleTimeout:  5 * time.Minute,
		Verbosity:                       2,
		ShutdownGracePeriod:             30 * time.Second,
		ShutdownGracePeriodCriticalPods: 10 * time.Second,
		CgroupsPerQOS:                   false,
		CgroupRoot:                      "/node",
		CgroupDriver:                    "systemd",
		PodPidsLimit:                    0, // -1 by default
		Tracing:                         &tracingapi.TracingConfiguration{Endpoint: ptr.To("otel.example:4317"), SamplingRatePerMillion: ptr.To[int32](1000)},
		KubeReserved:                    map[string]string{"cpu": "100m", "memory": "1Gi"},
		SystemReserved:                  map[string]string{"pid": "1000"},
		EvictionHard:                    map[string]string{"memory.available": "200Mi"},
		EnforceNodeAllocatable:          []string{"none"},
		KubeReservedCgroup:              "/kube",
		SystemReservedCgroup:            "/system",
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options:\n got %+v\nwant %+v", o, want)
	}
}

// TestSupportedFieldsListMatchesSample keeps supportedConfigFields honest: the
// sample above sets exactly those fields, and the test above proves each one
// reaches Options.
func TestSupportedFieldsListMatchesSample(t *testing.T) {
	kc, err := DecodeConfig([]byte(allSupportedYAML))
	if err != nil {
		t.Fatal(err)
	}
	var set []string
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Anonymous {
				continue
			}
			path := jsonName(f)
			if prefix != "" {
				path = prefix + "." + path
			}
			if f.Type.Kind() == reflect.Struct && isSet(v.Field(i)) && !slices.Contains(supportedConfigFields, path) {
				walk(v.Field(i), path)
			} else if isSet(v.Field(i)) {
				set = append(set, path)
			}
		}
	}
	walk(reflect.ValueOf(kc).Elem(), "")
	slices.Sort(set)
	want := slices.Sorted(slices.Values(supportedConfigFields))
	if !slices.Equal(set, want) {
		t.Errorf("sample sets %q\nsupported list %q", set, want)
	}
}

func TestUnsupportedFieldWarnings(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"none", "maxPods: 10", nil},
		{"non-default value", "cpuManagerPolicy: static", []string{`config field "cpuManagerPolicy" is not supported by nodelet and is ignored`}},
		{"upstream default value", "cpuManagerPolicy: none\ncgroupDriver: cgroupfs\nfailSwapOn: true", nil},
		{"explicit zero values", "cpuManagerReconcilePeriod: 0s\nevictionPressureTransitionPeriod: 0s\nmemorySwap: {}\nrotateCertificates: false", nil},
		{"pointer set to non-default false", "failSwapOn: false", []string{`config field "failSwapOn" is not supported by nodelet and is ignored`}},
		{"maps and nested structs named whole", "featureGates: {Foo: true}\nmemorySwap: {swapBehavior: LimitedSwap}", []string{
			`config field "featureGates" is not supported by nodelet and is ignored`,
			`config field "memorySwap" is not supported by nodelet and is ignored`,
		}},
		{"graceful shutdown by pod priority says what is missing", "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\nshutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 10}]", []string{
			`config field "shutdownGracePeriodByPodPriority" is not supported by nodelet and is ignored: nodelet stops pods on node shutdown in two groups only (shutdownGracePeriod, shutdownGracePeriodCriticalPods)`,
		}},
		{"partly supported structs named per field", "logging: {verbosity: 3, format: json}\nauthentication: {webhook: {enabled: true, cacheTTL: 1m}}", []string{
			`config field "logging.format" is not supported by nodelet and is ignored`,
		}},
		{"kubeadm style", `
authentication:
  anonymous: {enabled: false}
  webhook: {cacheTTL: 0s, enabled: true}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 0s, cacheUnauthorizedTTL: 0s}
cgroupDriver: systemd
containerRuntimeEndpoint: ""
hairpinMode: hairpin-veth
logging:
  flushFrequency: 0
  options:
    json: {infoBufferSize: "0"}
    text: {infoBufferSize: "0"}
  verbosity: 0
rotateCertificates: true
runtimeRequestTimeout: 0s
`, []string{
			// rotateCertificates and cgroupDriver, which kubeadm always
			// writes, are honoured.
			`config field "hairpinMode" is not supported by nodelet and is ignored`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := DecodeConfig([]byte(header + tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, refused := unsupportedFieldWarnings(kc)
			for _, err := range refused {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("warnings:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestUnsupportedFlagWarnings(t *testing.T) {
	stubHostname(t, "host")
	_, warnings, err := resolveArgs(t, "", "--fail-swap-on=false", "--hairpin-mode", "none", "--max-pods=5")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"flag --fail-swap-on is not supported by nodelet and is ignored",
		"flag --hairpin-mode is not supported by nodelet and is ignored",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, want)
	}
}

func TestUnknownFlagIsAnError(t *testing.T) {
	fs := NewFlagSet("nodelet")
	err := fs.Parse([]string{"--no-such-flag=1"})
	if err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("err = %v, want unknown flag error", err)
	}
}

func TestUnsupportedFlagsAreRealAndDistinct(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	d := Defaults()
	for _, f := range flagSpecs() {
		f.register(fs, d)
	}
	seen := map[string]bool{}
	for _, name := range slices.Concat(unsupportedBoolFlags, unsupportedValueFlags) {
		if fs.Lookup(name) != nil {
			t.Errorf("--%s is both supported and unsupported", name)
		}
		if seen[name] {
			t.Errorf("--%s listed twice", name)
		}
		seen[name] = true
	}
}

func TestUpstreamDefaultsTableDecodes(t *testing.T) {
	if kc := upstreamDefaults(); kc.CgroupDriver != "cgroupfs" {
		t.Errorf("cgroupDriver default = %q", kc.CgroupDriver)
	}
}
