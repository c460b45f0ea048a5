package options

import (
	"net"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	tracingapi "k8s.io/component-base/tracing/api/v1"

	"github.com/nodelet/nodelet/pkg/eviction"
)

// CloudProviderExternal is the one --cloud-provider value there is since
// upstream removed its built-in providers (v1.31): a cloud controller
// manager initialises the Node.
const CloudProviderExternal = "external"

// Authorization modes accepted by --authorization-mode.
const (
	AuthorizationModeAlwaysAllow = "AlwaysAllow"
	AuthorizationModeWebhook     = "Webhook"
)

// Options holds nodelet's effective settings once defaults, the config file and
// the flags have been merged (see Resolve). Comments name the flag and, where
// there is one, the KubeletConfiguration field.
type Options struct {
	// ConfigFile is the --config path the settings were read from ("" if none).
	ConfigFile string
	// KubeconfigPath is --kubeconfig; empty means standalone (no API server).
	KubeconfigPath string
	// RootDir is --root-dir, where nodelet keeps its state.
	RootDir string
	// BootstrapKubeconfigPath is --bootstrap-kubeconfig: the credential a
	// client certificate is requested with when --kubeconfig has no usable
	// one (TLS bootstrapping); the kubeconfig is then written.
	BootstrapKubeconfigPath string
	// ImageCredentialProviderConfig and ImageCredentialProviderBinDir are
	// --image-credential-provider-config and -bin-dir: the exec plugins
	// that give registry credentials (package credentialprovider).
	ImageCredentialProviderConfig, ImageCredentialProviderBinDir string
	// CertDir is --cert-dir: where the bootstrapped and rotated certificates
	// (kubelet-client-*.pem, kubelet-server-*.pem) live. Resolve fills it
	// with <root-dir>/pki when unset.
	CertDir string
	// RotateCertificates is --rotate-certificates / rotateCertificates:
	// renew the client certificate through CSRs before it expires.
	RotateCertificates bool
	// ServerTLSBootstrap is --rotate-server-certificates /
	// serverTLSBootstrap: request the node API's serving certificate from
	// the cluster (kubernetes.io/kubelet-serving) and renew it.
	ServerTLSBootstrap bool
	// ShutdownGracePeriod and ShutdownGracePeriodCriticalPods are graceful
	// node shutdown's (package shutdown): honoured where systemd-logind
	// runs; elsewhere nodelet says at start that nothing announces a
	// shutdown.
	ShutdownGracePeriod             time.Duration
	ShutdownGracePeriodCriticalPods time.Duration

	// HostnameOverride is --hostname-override as given.
	HostnameOverride string
	// Hostname is the lowercased override, or the lowercased os.Hostname. It is
	// also the node name: nodelet has no cloud provider to ask for another.
	Hostname string
	// NodeIP is --node-ip as given: up to two comma-separated IPs (dual stack).
	// Use NodeIPs for the parsed form.
	NodeIP string
	// NodeLabels is --node-labels, applied when registering the node.
	NodeLabels map[string]string

	// StaticPodPath is --pod-manifest-path / staticPodPath.
	StaticPodPath string
	// StaticPodURL is --manifest-url / staticPodURL.
	StaticPodURL string
	// StaticPodURLHeader is --manifest-url-header / staticPodURLHeader.
	StaticPodURLHeader map[string][]string
	// FileCheckFrequency is --file-check-frequency / fileCheckFrequency.
	FileCheckFrequency time.Duration
	// HTTPCheckFrequency is --http-check-frequency / httpCheckFrequency.
	HTTPCheckFrequency time.Duration
	// SyncFrequency is --sync-frequency / syncFrequency.
	SyncFrequency time.Duration
	// RelistPeriod is nodelet's --relist-period: how often the PLEG relists.
	RelistPeriod time.Duration

	// ContainerRuntimeEndpoint is --container-runtime-endpoint.
	ContainerRuntimeEndpoint string
	// ImageServiceEndpoint is --image-service-endpoint; Resolve fills it with
	// ContainerRuntimeEndpoint when unset, as upstream does.
	ImageServiceEndpoint string
	// PodInfraContainerImage is --pod-infra-container-image: the sandbox image.
	PodInfraContainerImage string
	// PodLogsDir is podLogsDir (config file only, as upstream).
	PodLogsDir string
	// ContainerLogMaxSize is --container-log-max-size as a quantity string
	// ("10Mi"); ContainerLogMaxSizeBytes gives the number.
	ContainerLogMaxSize string
	// ContainerLogMaxFiles is --container-log-max-files.
	ContainerLogMaxFiles int

	// ImageGCHighThresholdPercent is --image-gc-high-threshold.
	ImageGCHighThresholdPercent int
	// ImageGCLowThresholdPercent is --image-gc-low-threshold.
	ImageGCLowThresholdPercent int
	// ImageMinimumGCAge is --minimum-image-ttl-duration / imageMinimumGCAge.
	ImageMinimumGCAge time.Duration

	// MaxPods is --max-pods.
	MaxPods int
	// ClusterDNS is --cluster-dns: nameserver IPs for ClusterFirst pods.
	ClusterDNS []string
	// ClusterDomain is --cluster-domain.
	ClusterDomain string
	// ResolvConf is --resolv-conf / resolvConf: the resolver file pods with
	// dnsPolicy Default inherit; empty disables inheriting.
	ResolvConf string

	// SeccompDefault is --seccomp-default / seccompDefault: containers that
	// ask for no seccomp profile get the runtime's default one.
	SeccompDefault bool
	// CgroupsPerQOS is --cgroups-per-qos / cgroupsPerQOS: make the kubepods
	// hierarchy (burstable, besteffort) and one cgroup per pod carrying its
	// limits, the runtime's CgroupParent for its containers (package
	// cgroups). false puts containers under the runtime's default cgroup.
	CgroupsPerQOS bool
	// CgroupRoot is --cgroup-root / cgroupRoot: the existing cgroup kubepods
	// is made under; "" is the root.
	CgroupRoot string
	// CgroupDriver is --cgroup-driver / cgroupDriver: cgroupfs or systemd
	// (systemd is refused at start for now: package cgroups).
	CgroupDriver string
	// PodPidsLimit is --pod-max-pids / podPidsLimit: > 0 limits the tasks
	// of each pod's cgroup; -1 (or 0) does not.
	PodPidsLimit int64
	// Tracing is tracing (config file only, as upstream): nil exports no
	// spans; set, spans of pod syncs and CRI calls go to its OTLP gRPC
	// endpoint (default localhost:4317), sampled per million as upstream.
	Tracing *tracingapi.TracingConfiguration

	// Node allocatable (allocatable.go): --kube-reserved, --system-reserved
	// (resource=quantity: cpu, memory, ephemeral-storage, pid),
	// --eviction-hard (signal: value; used for allocatable only, nodelet
	// does not evict yet), --enforce-node-allocatable (pods,
	// system-reserved, kube-reserved or none) and the cgroups the
	// reservations are enforced on.
	KubeReserved           map[string]string
	SystemReserved         map[string]string
	EvictionHard           map[string]string
	EnforceNodeAllocatable []string
	KubeReservedCgroup     string
	SystemReservedCgroup   string

	// AllowedUnsafeSysctls is --allowed-unsafe-sysctls /
	// allowedUnsafeSysctls: sysctls (or prefixes ending in '*') pods may
	// set beyond the safe set.
	AllowedUnsafeSysctls []string

	// RegisterNode is --register-node.
	RegisterNode bool
	// CloudProvider is --cloud-provider: "" (none) or CloudProviderExternal.
	CloudProvider string
	// ProviderID is --provider-id / providerID: the Node's spec.providerID.
	ProviderID string
	// NodeStatusUpdateFrequency is --node-status-update-frequency.
	NodeStatusUpdateFrequency time.Duration
	// NodeLeaseDurationSeconds is --node-lease-duration-seconds.
	NodeLeaseDurationSeconds int

	// HealthzPort is --healthz-port; 0 disables the healthz server.
	HealthzPort int
	// HealthzBindAddress is --healthz-bind-address.
	HealthzBindAddress string
	// ReadOnlyPort is --read-only-port; 0 disables the read-only server.
	ReadOnlyPort int
	// EnableServer is --enable-server: whether the authenticated API runs.
	EnableServer bool
	// Address is --address, the bind address of the API and read-only servers.
	Address string
	// Port is --port, the authenticated API port.
	Port int
	// TLSCertFile is --tls-cert-file.
	TLSCertFile string
	// TLSPrivateKeyFile is --tls-private-key-file.
	TLSPrivateKeyFile string
	// ClientCAFile is --client-ca-file / authentication.x509.clientCAFile.
	ClientCAFile string
	// AnonymousAuth is --anonymous-auth / authentication.anonymous.enabled.
	AnonymousAuth bool
	// WebhookAuthentication is --authentication-token-webhook /
	// authentication.webhook.enabled.
	WebhookAuthentication bool
	// AuthorizationMode is --authorization-mode / authorization.mode.
	AuthorizationMode string
	// TLSMinVersion is --tls-min-version / tlsMinVersion ("VersionTLS12");
	// use TLSVersion for the crypto/tls value.
	TLSMinVersion string
	// TLSCipherSuites is --tls-cipher-suites / tlsCipherSuites (IANA
	// names); use CipherSuiteIDs for the crypto/tls values.
	TLSCipherSuites []string
	// RegisterWithTaints is --register-with-taints / registerWithTaints:
	// the Node's taints when nodelet creates it.
	RegisterWithTaints []v1.Taint
	// WebhookTokenCacheTTL is --authentication-token-webhook-cache-ttl /
	// authentication.webhook.cacheTTL: how long TokenReview answers are kept.
	WebhookTokenCacheTTL time.Duration
	// AuthzCacheAuthorizedTTL and AuthzCacheUnauthorizedTTL are
	// --authorization-webhook-cache-{authorized,unauthorized}-ttl /
	// authorization.webhook.cache{Authorized,Unauthorized}TTL: how long
	// SubjectAccessReview answers are kept.
	AuthzCacheAuthorizedTTL   time.Duration
	AuthzCacheUnauthorizedTTL time.Duration
	// EnableDebuggingHandlers is --enable-debugging-handlers /
	// enableDebuggingHandlers: whether the node API serves exec, attach,
	// port-forward, run and container logs.
	EnableDebuggingHandlers bool
	// EnableProfilingHandler is enableProfilingHandler: whether the node
	// API serves /debug/pprof (behind the same authentication and
	// authorization as the rest, as nodes/proxy).
	EnableProfilingHandler bool
	// EnableSystemLogHandler is enableSystemLogHandler: the node API
	// serves the node's log files under /logs/.
	EnableSystemLogHandler bool
	// EnableDebugFlagsHandler is enableDebugFlagsHandler: the node API
	// takes PUT /debug/flags/v to change the log verbosity.
	EnableDebugFlagsHandler bool
	// EnableSystemLogQuery is enableSystemLogQuery: /logs/ also answers
	// the node log query (?query=service or file).
	EnableSystemLogQuery bool
	// StreamingConnectionIdleTimeout is --streaming-connection-idle-timeout
	// / streamingConnectionIdleTimeout: exec, attach and port-forward
	// sessions idle that long are closed; 0 never closes them.
	StreamingConnectionIdleTimeout time.Duration
	// RegisterSchedulable is the deprecated --register-schedulable: false
	// registers the Node with the node.kubernetes.io/unschedulable taint.
	RegisterSchedulable bool

	// Verbosity is --v, or logging.verbosity from the config file. The --v
	// flag sets klog as it is parsed; ApplyVerbosity applies a file value.
	Verbosity int
}

// Defaults returns the settings nodelet uses when neither the config file nor
// a flag says otherwise. They are the upstream flag defaults, except
// --anonymous-auth, which nodelet keeps off (upstream's legacy flag default is
// on) so that a node started with flags only never serves anonymous requests,
// and --image-gc-high-threshold (90; upstream 85), as docs/FLAGS.md says.
func Defaults() *Options {
	return &Options{
		RootDir:                        "/var/lib/kubelet",
		FileCheckFrequency:             20 * time.Second,
		HTTPCheckFrequency:             20 * time.Second,
		SyncFrequency:                  time.Minute,
		RelistPeriod:                   time.Second,
		ContainerRuntimeEndpoint:       "unix:///run/containerd/containerd.sock",
		PodInfraContainerImage:         "registry.k8s.io/pause:3.10",
		PodLogsDir:                     "/var/log/pods",
		ContainerLogMaxSize:            "10Mi",
		ContainerLogMaxFiles:           5,
		ImageGCHighThresholdPercent:    90, // the project brief's default; upstream v1beta1 moved to 85
		ImageGCLowThresholdPercent:     80,
		ImageMinimumGCAge:              2 * time.Minute,
		MaxPods:                        110,
		CgroupsPerQOS:                  true,
		CgroupDriver:                   "cgroupfs",
		PodPidsLimit:                   -1,
		EvictionHard:                   eviction.DefaultHard(),
		EnforceNodeAllocatable:         []string{EnforcePods},
		ResolvConf:                     "/etc/resolv.conf",
		RegisterNode:                   true,
		NodeStatusUpdateFrequency:      10 * time.Second,
		NodeLeaseDurationSeconds:       40,
		HealthzPort:                    10248,
		HealthzBindAddress:             "127.0.0.1",
		ReadOnlyPort:                   0,
		EnableServer:                   true,
		Address:                        "0.0.0.0",
		Port:                           10250,
		AnonymousAuth:                  false,
		WebhookAuthentication:          false,
		AuthorizationMode:              AuthorizationModeAlwaysAllow,
		WebhookTokenCacheTTL:           2 * time.Minute,
		AuthzCacheAuthorizedTTL:        5 * time.Minute,
		AuthzCacheUnauthorizedTTL:      30 * time.Second,
		EnableDebuggingHandlers:        true,
		EnableProfilingHandler:         true,
		EnableSystemLogHandler:         true,
		EnableDebugFlagsHandler:        true,
		RegisterSchedulable:            true,
		StreamingConnectionIdleTimeout: 4 * time.Hour,
	}
}

// configFileDefaults are the defaults when a config file is used: upstream's
// v1beta1 defaulting differs from its flag defaults on authentication and
// authorization, and nodelet keeps that difference.
func configFileDefaults() *Options {
	o := Defaults()
	o.WebhookAuthentication = true
	o.AuthorizationMode = AuthorizationModeWebhook
	return o
}

// HealthzAddr is the host:port the healthz server listens on, or "" when
// --healthz-port is 0 (disabled).
func (o *Options) HealthzAddr() string {
	if o.HealthzPort == 0 {
		return ""
	}
	return net.JoinHostPort(o.HealthzBindAddress, strconv.Itoa(o.HealthzPort))
}

// ReadOnlyAddr is the host:port of the read-only server, or "" when
// --read-only-port is 0 (disabled).
func (o *Options) ReadOnlyAddr() string {
	if o.ReadOnlyPort == 0 {
		return ""
	}
	return net.JoinHostPort(o.Address, strconv.Itoa(o.ReadOnlyPort))
}

// ServerAddr is the host:port of the authenticated API, or "" when
// --enable-server is false.
func (o *Options) ServerAddr() string {
	if !o.EnableServer {
		return ""
	}
	return net.JoinHostPort(o.Address, strconv.Itoa(o.Port))
}

// NodeIPs returns the parsed --node-ip addresses. Entries that do not parse
// are skipped; Validate reports them.
func (o *Options) NodeIPs() []net.IP {
	var ips []net.IP
	for _, s := range splitList(o.NodeIP) {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		}
	}
	return ips
}

// ContainerLogMaxSizeBytes returns --container-log-max-size in bytes, or 0 if
// it does not parse (Validate reports that).
func (o *Options) ContainerLogMaxSizeBytes() int64 {
	q, err := resource.ParseQuantity(o.ContainerLogMaxSize)
	if err != nil {
		return 0
	}
	return q.Value()
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
