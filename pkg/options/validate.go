package options

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	tracingapi "k8s.io/component-base/tracing/api/v1"

	"github.com/nodelet/nodelet/pkg/security"
)

// Validate checks the settings and returns every problem found, joined, so an
// operator fixes them all in one go rather than one per restart. Messages name
// the flag; the same rule applies to the config file field behind it.
func (o *Options) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	percent := func(flag string, v int) {
		if v < 0 || v > 100 {
			add("--%s (%d) must be between 0 and 100", flag, v)
		}
	}
	percent("image-gc-high-threshold", o.ImageGCHighThresholdPercent)
	percent("image-gc-low-threshold", o.ImageGCLowThresholdPercent)
	if o.ImageGCLowThresholdPercent >= o.ImageGCHighThresholdPercent {
		add("--image-gc-low-threshold (%d) must be less than --image-gc-high-threshold (%d)",
			o.ImageGCLowThresholdPercent, o.ImageGCHighThresholdPercent)
	}
	if o.ImageMinimumGCAge < 0 {
		add("--minimum-image-ttl-duration (%s) must not be negative", o.ImageMinimumGCAge)
	}

	port := func(flag string, v, lowest int) {
		if v < lowest || v > 65535 {
			add("--%s (%d) must be between %d and 65535", flag, v, lowest)
		}
	}
	port("port", o.Port, 1)
	port("healthz-port", o.HealthzPort, 0)
	port("read-only-port", o.ReadOnlyPort, 0)
	ip := func(flag, addr string) {
		if net.ParseIP(addr) == nil {
			add("--%s (%q) must be an IP address", flag, addr)
		}
	}
	for _, e := range tracingapi.ValidateTracingConfiguration(o.Tracing, nil, field.NewPath("tracing")) {
		errs = append(errs, e)
	}
	ip("address", o.Address)
	ip("healthz-bind-address", o.HealthzBindAddress)

	// TLS bootstrapping writes --kubeconfig and talks to a cluster; without
	// one these settings would silently do nothing.
	if o.KubeconfigPath == "" {
		if o.BootstrapKubeconfigPath != "" {
			add("--bootstrap-kubeconfig needs --kubeconfig: the path the bootstrapped kubeconfig is written to")
		}
		if o.RotateCertificates {
			add("--rotate-certificates (rotateCertificates) needs --kubeconfig: there is no client certificate to rotate when standalone")
		}
		if o.ServerTLSBootstrap {
			add("--rotate-server-certificates (serverTLSBootstrap) needs --kubeconfig: the serving certificate is requested from the cluster")
		}
	}

	positive := func(flag string, d time.Duration) {
		if d <= 0 {
			add("--%s (%s) must be greater than 0", flag, d)
		}
	}
	positive("file-check-frequency", o.FileCheckFrequency)
	positive("http-check-frequency", o.HTTPCheckFrequency)
	positive("sync-frequency", o.SyncFrequency)
	positive("relist-period", o.RelistPeriod)
	positive("node-status-update-frequency", o.NodeStatusUpdateFrequency)
	if o.NodeLeaseDurationSeconds <= 0 {
		add("--node-lease-duration-seconds (%d) must be greater than 0", o.NodeLeaseDurationSeconds)
	}
	if o.MaxPods < 0 {
		add("--max-pods (%d) must not be negative", o.MaxPods)
	}

	if err := validateManifestURL(o.StaticPodURL); err != nil {
		errs = append(errs, err)
	}
	if err := validateEndpoint("container-runtime-endpoint", o.ContainerRuntimeEndpoint); err != nil {
		errs = append(errs, err)
	}
	// An unset image endpoint is the runtime one: report that only once.
	if o.ImageServiceEndpoint != "" && o.ImageServiceEndpoint != o.ContainerRuntimeEndpoint {
		if err := validateEndpoint("image-service-endpoint", o.ImageServiceEndpoint); err != nil {
			errs = append(errs, err)
		}
	}
	if o.PodInfraContainerImage == "" {
		add("--pod-infra-container-image must not be empty")
	}
	if o.RootDir == "" {
		add("--root-dir must not be empty")
	}

	if q, err := resource.ParseQuantity(o.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		add("--container-log-max-size (%q) must be a positive quantity such as 10Mi", o.ContainerLogMaxSize)
	}
	if o.ContainerLogMaxFiles < 2 {
		add("--container-log-max-files (%d) must be at least 2", o.ContainerLogMaxFiles)
	}

	errs = append(errs, o.validateCgroups()...)
	errs = append(errs, o.validateAllocatable()...)

	switch o.AuthorizationMode {
	case AuthorizationModeAlwaysAllow, AuthorizationModeWebhook:
	default:
		add("--authorization-mode (%q) must be %s or %s", o.AuthorizationMode, AuthorizationModeAlwaysAllow, AuthorizationModeWebhook)
	}
	if (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == "") {
		add("--tls-cert-file and --tls-private-key-file must be set together")
	}

	errs = append(errs, o.validateTLS()...)
	errs = append(errs, o.validateCacheTTLs()...)
	errs = append(errs, validateTaints(o.RegisterWithTaints)...)
	errs = append(errs, validateNodeIP(o.NodeIP)...)
	for _, s := range o.ClusterDNS {
		if net.ParseIP(s) == nil {
			add("--cluster-dns entry %q is not an IP address", s)
		}
	}
	errs = append(errs, validateNodeLabels(o.NodeLabels)...)
	switch o.CloudProvider {
	case "", CloudProviderExternal:
	default:
		add("--cloud-provider (%q) must be empty or %q: the built-in cloud providers were removed upstream (v1.31); run the provider's cloud controller manager and set --cloud-provider=external", o.CloudProvider, CloudProviderExternal)
	}
	if o.Hostname != "" {
		if msgs := validation.IsDNS1123Subdomain(o.Hostname); len(msgs) > 0 {
			add("node name %q (from --hostname-override or the host name) is invalid: %s", o.Hostname, strings.Join(msgs, "; "))
		}
	}
	if _, err := security.NewSysctlAllowlist(o.AllowedUnsafeSysctls); err != nil {
		add("--allowed-unsafe-sysctls: %v", err)
	}
	return errors.Join(errs...)
}

func validateManifestURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("--manifest-url (%q) is not a valid URL: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--manifest-url (%q) must be an http:// or https:// URL with a host", s)
	}
	return nil
}

// validateEndpoint accepts only unix:// sockets: nodelet talks to a local CRI
// runtime, and a bare path (which upstream still tolerates with a deprecation
// warning) is ambiguous.
func validateEndpoint(flag, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "unix" || (u.Path == "" && u.Host == "") {
		return fmt.Errorf("--%s (%q) must be a unix:// socket URL such as unix:///run/containerd/containerd.sock", flag, s)
	}
	return nil
}

func validateNodeIP(s string) []error {
	parts := splitList(s)
	if len(parts) == 0 {
		return nil
	}
	var errs []error
	var v4, v6 int
	for _, p := range parts {
		ip := net.ParseIP(p)
		switch {
		case ip == nil:
			errs = append(errs, fmt.Errorf("--node-ip entry %q is not an IP address", p))
		case ip.To4() != nil:
			v4++
		default:
			v6++
		}
	}
	if len(parts) > 2 {
		errs = append(errs, fmt.Errorf("--node-ip (%q) must hold at most two addresses", s))
	} else if len(parts) == 2 && len(errs) == 0 && (v4 != 1 || v6 != 1) {
		errs = append(errs, fmt.Errorf("--node-ip (%q) with two addresses must hold one IPv4 and one IPv6", s))
	}
	return errs
}

// kubeletLabels are the kubernetes.io / k8s.io labels a node may set on
// itself; the NodeRestriction admission plugin rejects the others, so
// upstream refuses them at startup and so does nodelet.
var kubeletLabels = map[string]bool{
	v1.LabelHostname:                true,
	v1.LabelTopologyZone:            true,
	v1.LabelTopologyRegion:          true,
	v1.LabelFailureDomainBetaZone:   true,
	v1.LabelFailureDomainBetaRegion: true,
	v1.LabelInstanceType:            true,
	v1.LabelInstanceTypeStable:      true,
	v1.LabelOSStable:                true,
	v1.LabelArchStable:              true,
	"beta.kubernetes.io/os":         true,
	"beta.kubernetes.io/arch":       true,
}

// kubeletLabelNamespaces may be used freely, including their subdomains.
var kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}

func validateNodeLabels(labels map[string]string) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--node-labels key %q is invalid: %s", k, strings.Join(msgs, "; ")))
			continue
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--node-labels value %q of %q is invalid: %s", v, k, strings.Join(msgs, "; ")))
		}
		if isRestrictedLabel(k) {
			errs = append(errs, fmt.Errorf("--node-labels key %q is in the kubernetes.io or k8s.io namespace but not one a node may set (allowed: the %s namespaces and the well-known topology, instance-type, os and arch labels)%s",
				k, strings.Join(kubeletLabelNamespaces, " and "), restrictedLabelHint(k)))
		}
	}
	return errs
}

// restrictedLabelHint says what to do instead for the two namespaces
// operators most often try to set from the node.
func restrictedLabelHint(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	switch ns {
	case "node-role.kubernetes.io":
		return "; a node's role is set by an administrator (kubectl label node NAME " + key + "=), which the NodeRestriction admission plugin forbids the node itself"
	case "node-restriction.kubernetes.io":
		return "; that namespace exists so that only administrators can set its labels (kubectl label node), never the node, and workloads can trust them"
	}
	return ""
}

func isRestrictedLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok || kubeletLabels[key] {
		return false
	}
	inNS := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
	if !inNS("kubernetes.io") && !inNS("k8s.io") {
		return false
	}
	for _, allowed := range kubeletLabelNamespaces {
		if inNS(allowed) {
			return false
		}
	}
	return true
}

// validateCgroups checks the cgroup settings that need no look at the host
// (package cgroups checks the rest at start).
func (o *Options) validateCgroups() []error {
	var errs []error
	switch o.CgroupDriver {
	case "cgroupfs", "systemd":
	default:
		errs = append(errs, fmt.Errorf("--cgroup-driver (%q) must be cgroupfs or systemd", o.CgroupDriver))
	}
	if o.CgroupRoot != "" && !strings.HasPrefix(o.CgroupRoot, "/") {
		errs = append(errs, fmt.Errorf("--cgroup-root (%q) must be an absolute cgroup path", o.CgroupRoot))
	}
	// Upstream then silently limits nothing; the limit lives on the pod
	// cgroup, which only exists with cgroups per QoS.
	if o.PodPidsLimit > 0 && !o.CgroupsPerQOS {
		errs = append(errs, fmt.Errorf("--pod-max-pids (podPidsLimit) %d needs --cgroups-per-qos: the limit is set on the pod's cgroup", o.PodPidsLimit))
	}
	if o.PodPidsLimit < -1 {
		errs = append(errs, fmt.Errorf("--pod-max-pids (%d) must be -1 (unlimited) or more", o.PodPidsLimit))
	}
	return errs
}
