package options

import (
	goflag "flag"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// Flag names that other code (main, tests) refers to by name.
const (
	FlagConfig    = "config"
	FlagVerbosity = "v"
)

// NewFlagSet returns a flag set named name with every nodelet flag registered.
// It uses ContinueOnError, so Parse reports bad flags (and pflag.ErrHelp for
// --help) to the caller instead of exiting.
func NewFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	AddFlags(fs)
	return fs
}

// AddFlags registers nodelet's flags on fs with the upstream names and
// defaults, the klog flags (--v, --vmodule), and the upstream flags nodelet
// accepts but ignores (hidden from --help; Resolve warns when one is set).
func AddFlags(fs *pflag.FlagSet) {
	// Upstream accepts --pod_manifest_path for --pod-manifest-path; keep that.
	fs.SetNormalizeFunc(wordSepNormalize)
	d := Defaults()
	for _, f := range flagSpecs() {
		f.register(fs, d)
	}
	for _, f := range securityFlagSpecs() {
		f.register(fs, d)
	}
	for _, f := range allocatableFlagSpecs() {
		f.register(fs, d)
	}
	addKlogFlags(fs)
	addUnsupportedFlags(fs)
}

func wordSepNormalize(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// addKlogFlags exposes klog's verbosity flags. klog binds them to its global
// state, so --v takes effect as soon as the flag set is parsed.
func addKlogFlags(fs *pflag.FlagSet) {
	var gfs goflag.FlagSet
	klog.InitFlags(&gfs)
	for _, name := range []string{"v", "vmodule"} {
		if f := gfs.Lookup(name); f != nil {
			fs.AddGoFlag(f)
		}
	}
}

// flagSpec ties one flag to the Options field it sets, so registration (with
// the default taken from Defaults) and applying an explicitly set value are
// written once per flag.
type flagSpec struct {
	name     string
	register func(fs *pflag.FlagSet, defaults *Options)
	apply    func(fs *pflag.FlagSet, o *Options) error
}

// bind builds a flagSpec from pflag's typed registration and getter methods,
// e.g. (*pflag.FlagSet).StringVar and (*pflag.FlagSet).GetString.
func bind[T any](name, usage string, field func(*Options) *T,
	register func(fs *pflag.FlagSet, p *T, name string, value T, usage string),
	get func(fs *pflag.FlagSet, name string) (T, error),
) flagSpec {
	return flagSpec{
		name: name,
		register: func(fs *pflag.FlagSet, d *Options) {
			register(fs, new(T), name, *field(d), usage)
		},
		apply: func(fs *pflag.FlagSet, o *Options) error {
			v, err := get(fs, name)
			if err != nil {
				return fmt.Errorf("reading --%s: %w", name, err)
			}
			*field(o) = v
			return nil
		},
	}
}

func stringFlag(name, usage string, field func(*Options) *string) flagSpec {
	return bind(name, usage, field, (*pflag.FlagSet).StringVar, (*pflag.FlagSet).GetString)
}

func intFlag(name, usage string, field func(*Options) *int) flagSpec {
	return bind(name, usage, field, (*pflag.FlagSet).IntVar, (*pflag.FlagSet).GetInt)
}

func int64Flag(name, usage string, field func(*Options) *int64) flagSpec {
	return bind(name, usage, field, (*pflag.FlagSet).Int64Var, (*pflag.FlagSet).GetInt64)
}

func boolFlag(name, usage string, field func(*Options) *bool) flagSpec {
	return bind(name, usage, field, (*pflag.FlagSet).BoolVar, (*pflag.FlagSet).GetBool)
}

func durationFlag(name, usage string, field func(*Options) *time.Duration) flagSpec {
	return bind(name, usage, field, (*pflag.FlagSet).DurationVar, (*pflag.FlagSet).GetDuration)
}

func stringSliceFlag(name, usage string, field func(*Options) *[]string) flagSpec {
	return bind(name, usage, field, (*pflag.FlagSet).StringSliceVar, (*pflag.FlagSet).GetStringSlice)
}

// headerFlag registers --manifest-url-header, whose repeat-and-append
// semantics pflag has no built-in type for.
func headerFlag(name, usage string) flagSpec {
	return flagSpec{
		name: name,
		register: func(fs *pflag.FlagSet, _ *Options) {
			fs.Var(&headerValue{}, name, usage)
		},
		apply: func(fs *pflag.FlagSet, o *Options) error {
			v, ok := fs.Lookup(name).Value.(*headerValue)
			if !ok {
				return fmt.Errorf("--%s is registered with an unexpected type", name)
			}
			o.StaticPodURLHeader = v.m
			return nil
		},
	}
}

// flagSpecs lists every flag nodelet implements.
func flagSpecs() []flagSpec {
	return []flagSpec{
		stringFlag(FlagConfig, "Path to a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) file. Flags set explicitly override its values.",
			func(o *Options) *string { return &o.ConfigFile }),
		stringFlag("kubeconfig", "Path to a kubeconfig file for the API server. Empty runs standalone: static pods only.",
			func(o *Options) *string { return &o.KubeconfigPath }),
		stringFlag("root-dir", "Directory for nodelet's files (pod directories, state).",
			func(o *Options) *string { return &o.RootDir }),
		stringFlag("bootstrap-kubeconfig", "Path to a kubeconfig whose credential may request a client certificate (TLS bootstrapping). Used when --kubeconfig is missing or has no valid client certificate; the kubeconfig is then written, pointing at <cert-dir>/kubelet-client-current.pem.",
			func(o *Options) *string { return &o.BootstrapKubeconfigPath }),
		stringFlag("image-credential-provider-config", "Path to the credential provider plugin config (a CredentialProviderConfig file, or a directory of *.json/*.yaml/*.yml files merged in name order). Plugins give registry credentials for the images they match; they are tried after the pod's pull secrets.",
			func(o *Options) *string { return &o.ImageCredentialProviderConfig }),
		stringFlag("image-credential-provider-bin-dir", "Directory of the credential provider plugin binaries named in --image-credential-provider-config.",
			func(o *Options) *string { return &o.ImageCredentialProviderBinDir }),
		stringFlag("cert-dir", "Directory of the client and serving certificates requested from the cluster (kubelet-client-current.pem, kubelet-server-current.pem) and of the self-signed serving certificate. Defaults to <root-dir>/pki.",
			func(o *Options) *string { return &o.CertDir }),
		boolFlag("rotate-certificates", "Renew the client certificate through the certificates API before it expires (at 70-90% of its lifetime).",
			func(o *Options) *bool { return &o.RotateCertificates }),
		boolFlag("rotate-server-certificates", "Request the node API's serving certificate from the cluster (kubernetes.io/kubelet-serving signer) and renew it before it expires; until it is issued, TLS handshakes on --port fail.",
			func(o *Options) *bool { return &o.ServerTLSBootstrap }),
		stringFlag("hostname-override", "Use this name instead of the host name to identify the node.",
			func(o *Options) *string { return &o.HostnameOverride }),
		stringFlag("node-ip", "IP address (or comma-separated dual-stack pair) of the node.",
			func(o *Options) *string { return &o.NodeIP }),
		pairsFlag("node-labels", "label", "=", "Labels to add when registering the node, as key=value pairs separated by ','. Labels in the kubernetes.io and k8s.io namespaces are restricted to the kubelet-settable set.",
			func(o *Options) *map[string]string { return &o.NodeLabels }),

		stringFlag("pod-manifest-path", "Directory of static pod manifests to run, or a single manifest file.",
			func(o *Options) *string { return &o.StaticPodPath }),
		stringFlag("manifest-url", "URL of static pod manifests to run.",
			func(o *Options) *string { return &o.StaticPodURL }),
		headerFlag("manifest-url-header", "HTTP headers for --manifest-url, as comma-separated key:value pairs. May be repeated; repeating a key adds a value."),
		durationFlag("file-check-frequency", "How often to re-read --pod-manifest-path.",
			func(o *Options) *time.Duration { return &o.FileCheckFrequency }),
		durationFlag("http-check-frequency", "How often to re-fetch --manifest-url.",
			func(o *Options) *time.Duration { return &o.HTTPCheckFrequency }),
		durationFlag("sync-frequency", "Maximum period between syncs of a running pod.",
			func(o *Options) *time.Duration { return &o.SyncFrequency }),
		durationFlag("relist-period", "How often to relist the container runtime for changes (nodelet only).",
			func(o *Options) *time.Duration { return &o.RelistPeriod }),

		stringFlag("container-runtime-endpoint", "CRI runtime service endpoint (unix:// socket).",
			func(o *Options) *string { return &o.ContainerRuntimeEndpoint }),
		stringFlag("image-service-endpoint", "CRI image service endpoint (unix:// socket). Defaults to --container-runtime-endpoint.",
			func(o *Options) *string { return &o.ImageServiceEndpoint }),
		stringFlag("pod-infra-container-image", "Image of the pod sandbox (pause) container.",
			func(o *Options) *string { return &o.PodInfraContainerImage }),
		stringFlag("container-log-max-size", "Size a container log reaches before it is rotated, e.g. 10Mi.",
			func(o *Options) *string { return &o.ContainerLogMaxSize }),
		intFlag("container-log-max-files", "Maximum number of log files kept per container (at least 2).",
			func(o *Options) *int { return &o.ContainerLogMaxFiles }),

		intFlag("image-gc-high-threshold", "Disk usage percent above which image garbage collection always runs.",
			func(o *Options) *int { return &o.ImageGCHighThresholdPercent }),
		intFlag("image-gc-low-threshold", "Disk usage percent image garbage collection frees down to.",
			func(o *Options) *int { return &o.ImageGCLowThresholdPercent }),
		durationFlag("minimum-image-ttl-duration", "Minimum age of an unused image before it may be garbage collected.",
			func(o *Options) *time.Duration { return &o.ImageMinimumGCAge }),

		intFlag("max-pods", "Maximum number of pods on this node.",
			func(o *Options) *int { return &o.MaxPods }),
		stringSliceFlag("cluster-dns", "Comma-separated DNS server IPs for pods with dnsPolicy ClusterFirst.",
			func(o *Options) *[]string { return &o.ClusterDNS }),
		stringFlag("cluster-domain", "Cluster DNS domain added to pods' search list.",
			func(o *Options) *string { return &o.ClusterDomain }),
		stringFlag("resolv-conf", "Resolver configuration file pods with dnsPolicy Default inherit. Empty disables it.",
			func(o *Options) *string { return &o.ResolvConf }),
		boolFlag("seccomp-default", "Run containers that set no seccomp profile with the runtime's default profile (RuntimeDefault) instead of Unconfined.",
			func(o *Options) *bool { return &o.SeccompDefault }),
		boolFlag("cgroups-per-qos", "Make the kubepods cgroup with one cgroup per QoS class (burstable, besteffort) and per pod carrying the pod's CPU, memory and PID limits; the pod's containers are created under it. false leaves containers in the runtime's default cgroup.",
			func(o *Options) *bool { return &o.CgroupsPerQOS }),
		stringFlag("cgroup-root", "Existing cgroup under which kubepods is made (with --cgroups-per-qos). Empty is the root cgroup.",
			func(o *Options) *string { return &o.CgroupRoot }),
		stringFlag("cgroup-driver", "How cgroups are managed: cgroupfs (written directly) or systemd (slices; not supported yet, refused at start). Must match the runtime's.",
			func(o *Options) *string { return &o.CgroupDriver }),
		int64Flag("pod-max-pids", "Maximum number of processes in each pod (its cgroup's pids.max); -1 is unlimited. Needs --cgroups-per-qos.",
			func(o *Options) *int64 { return &o.PodPidsLimit }),
		stringSliceFlag("allowed-unsafe-sysctls", "Comma-separated unsafe sysctls or sysctl patterns (ending in *) pods may set besides the safe ones. Each must be namespaced.",
			func(o *Options) *[]string { return &o.AllowedUnsafeSysctls }),

		boolFlag("register-node", "Register the node with the API server. false: nodelet does not create the Node and waits for one to exist.",
			func(o *Options) *bool { return &o.RegisterNode }),
		stringFlag("cloud-provider", "Empty for no cloud provider, or 'external': the Node is registered with the node.cloudprovider.kubernetes.io/uninitialized:NoSchedule taint, which an external cloud controller manager removes, and keeps the addresses it sets. Built-in providers no longer exist upstream and are refused.",
			func(o *Options) *string { return &o.CloudProvider }),
		stringFlag("provider-id", "Unique identifier of the node in the cloud's machine database: the Node's spec.providerID when nodelet registers it.",
			func(o *Options) *string { return &o.ProviderID }),
		durationFlag("node-status-update-frequency", "How often node status is computed and posted.",
			func(o *Options) *time.Duration { return &o.NodeStatusUpdateFrequency }),
		intFlag("node-lease-duration-seconds", "Duration of the node Lease, in seconds.",
			func(o *Options) *int { return &o.NodeLeaseDurationSeconds }),

		intFlag("healthz-port", "Port of the localhost healthz endpoint; 0 disables it.",
			func(o *Options) *int { return &o.HealthzPort }),
		stringFlag("healthz-bind-address", "IP address the healthz server binds to.",
			func(o *Options) *string { return &o.HealthzBindAddress }),
		intFlag("read-only-port", "Port of the unauthenticated read-only server (/pods, /healthz); 0 disables it.",
			func(o *Options) *int { return &o.ReadOnlyPort }),
		boolFlag("enable-server", "Run the authenticated node API server.",
			func(o *Options) *bool { return &o.EnableServer }),
		stringFlag("address", "IP address the node API and read-only servers bind to.",
			func(o *Options) *string { return &o.Address }),
		intFlag("port", "Port of the authenticated node API server.",
			func(o *Options) *int { return &o.Port }),
		stringFlag("tls-cert-file", "x509 certificate for the node API server.",
			func(o *Options) *string { return &o.TLSCertFile }),
		stringFlag("tls-private-key-file", "x509 private key matching --tls-cert-file.",
			func(o *Options) *string { return &o.TLSPrivateKeyFile }),
		stringFlag("client-ca-file", "CA bundle that client certificates of node API requests are verified against.",
			func(o *Options) *string { return &o.ClientCAFile }),
		boolFlag("anonymous-auth", "Allow unauthenticated requests to the node API, as user system:anonymous.",
			func(o *Options) *bool { return &o.AnonymousAuth }),
		boolFlag("authentication-token-webhook", "Authenticate bearer tokens with the TokenReview API.",
			func(o *Options) *bool { return &o.WebhookAuthentication }),
		stringFlag("authorization-mode", "AlwaysAllow or Webhook (SubjectAccessReview). Defaults to AlwaysAllow with flags only and to Webhook when --config is used, as upstream.",
			func(o *Options) *string { return &o.AuthorizationMode }),
	}
}
