package options

import (
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// supportedConfigFields are the KubeletConfiguration fields (JSON paths) that
// applyConfigFile honours. Every other field that a file sets to a
// non-default value is reported as ignored (see unsupportedFieldWarnings).
// Keep this and applyConfigFile in step; the tests check they agree.
var supportedConfigFields = []string{
	"enableServer",
	"staticPodPath",
	"podLogsDir",
	"syncFrequency",
	"fileCheckFrequency",
	"httpCheckFrequency",
	"staticPodURL",
	"staticPodURLHeader",
	"address",
	"port",
	"readOnlyPort",
	"tlsCertFile",
	"tlsPrivateKeyFile",
	"authentication.x509.clientCAFile",
	"authentication.webhook.enabled",
	"authentication.anonymous.enabled",
	"authorization.mode",
	"healthzPort",
	"healthzBindAddress",
	"clusterDomain",
	"clusterDNS",
	"nodeStatusUpdateFrequency",
	"nodeLeaseDurationSeconds",
	"imageMinimumGCAge",
	"imageGCHighThresholdPercent",
	"imageGCLowThresholdPercent",
	"maxPods",
	"resolvConf",
	"seccompDefault",
	"allowedUnsafeSysctls",
	"containerLogMaxSize",
	"containerLogMaxFiles",
	"logging.verbosity",
	"registerNode",
	"providerID",
	"containerRuntimeEndpoint",
	"imageServiceEndpoint",
	"tlsMinVersion",
	"tlsCipherSuites",
	"registerWithTaints",
	"authentication.webhook.cacheTTL",
	"authorization.webhook.cacheAuthorizedTTL",
	"authorization.webhook.cacheUnauthorizedTTL",
	"enableDebuggingHandlers",
	"enableProfilingHandler",
	"enableSystemLogHandler",
	"enableSystemLogQuery",
	"enableDebugFlagsHandler",
	"streamingConnectionIdleTimeout",
	"rotateCertificates",
	"serverTLSBootstrap",
	"shutdownGracePeriod",
	"shutdownGracePeriodCriticalPods",
	"cgroupsPerQOS",
	"cgroupRoot",
	"cgroupDriver",
	"podPidsLimit",
	"tracing",
	// allocatable.go
	"kubeReserved",
	"systemReserved",
	"evictionHard",
	"enforceNodeAllocatable",
	"kubeReservedCgroup",
	"systemReservedCgroup",
}

// applyConfigFile copies the supported fields the file sets onto o. A field
// left out of the file decodes to its zero value (or nil pointer) and keeps
// o's default, which is how upstream's v1beta1 defaulting treats it too.
func applyConfigFile(o *Options, kc *kubeletconfigv1beta1.KubeletConfiguration) {
	setPtr(&o.EnableServer, kc.EnableServer)
	setString(&o.StaticPodPath, kc.StaticPodPath)
	setString(&o.PodLogsDir, kc.PodLogsDir)
	setNonZero(&o.ShutdownGracePeriod, kc.ShutdownGracePeriod.Duration)
	setNonZero(&o.ShutdownGracePeriodCriticalPods, kc.ShutdownGracePeriodCriticalPods.Duration)
	setNonZero(&o.SyncFrequency, kc.SyncFrequency.Duration)
	setNonZero(&o.FileCheckFrequency, kc.FileCheckFrequency.Duration)
	setNonZero(&o.HTTPCheckFrequency, kc.HTTPCheckFrequency.Duration)
	setString(&o.StaticPodURL, kc.StaticPodURL)
	if len(kc.StaticPodURLHeader) > 0 {
		o.StaticPodURLHeader = kc.StaticPodURLHeader
	}
	setString(&o.Address, kc.Address)
	setNonZero(&o.Port, int(kc.Port))
	setNonZero(&o.ReadOnlyPort, int(kc.ReadOnlyPort))
	setString(&o.TLSCertFile, kc.TLSCertFile)
	setString(&o.TLSPrivateKeyFile, kc.TLSPrivateKeyFile)
	setString(&o.ClientCAFile, kc.Authentication.X509.ClientCAFile)
	setPtr(&o.WebhookAuthentication, kc.Authentication.Webhook.Enabled)
	setPtr(&o.AnonymousAuth, kc.Authentication.Anonymous.Enabled)
	setString(&o.AuthorizationMode, string(kc.Authorization.Mode))
	// healthzPort is a pointer upstream precisely so that 0 (disabled) can
	// be said in a file.
	if kc.HealthzPort != nil {
		o.HealthzPort = int(*kc.HealthzPort)
	}
	setString(&o.HealthzBindAddress, kc.HealthzBindAddress)
	setString(&o.ClusterDomain, kc.ClusterDomain)
	if len(kc.ClusterDNS) > 0 {
		o.ClusterDNS = kc.ClusterDNS
	}
	setNonZero(&o.NodeStatusUpdateFrequency, kc.NodeStatusUpdateFrequency.Duration)
	setNonZero(&o.NodeLeaseDurationSeconds, int(kc.NodeLeaseDurationSeconds))
	setNonZero(&o.ImageMinimumGCAge, kc.ImageMinimumGCAge.Duration)
	if kc.ImageGCHighThresholdPercent != nil {
		o.ImageGCHighThresholdPercent = int(*kc.ImageGCHighThresholdPercent)
	}
	if kc.ImageGCLowThresholdPercent != nil {
		o.ImageGCLowThresholdPercent = int(*kc.ImageGCLowThresholdPercent)
	}
	setNonZero(&o.MaxPods, int(kc.MaxPods))
	// resolvConf: "" is meaningful (disable), so only nil keeps the default.
	setPtr(&o.ResolvConf, kc.ResolverConfig)
	setPtr(&o.SeccompDefault, kc.SeccompDefault)
	if len(kc.AllowedUnsafeSysctls) > 0 {
		o.AllowedUnsafeSysctls = kc.AllowedUnsafeSysctls
	}
	setString(&o.ContainerLogMaxSize, kc.ContainerLogMaxSize)
	if kc.ContainerLogMaxFiles != nil {
		o.ContainerLogMaxFiles = int(*kc.ContainerLogMaxFiles)
	}
	setNonZero(&o.Verbosity, int(kc.Logging.Verbosity))
	setPtr(&o.RegisterNode, kc.RegisterNode)
	setString(&o.ProviderID, kc.ProviderID)
	setString(&o.ContainerRuntimeEndpoint, kc.ContainerRuntimeEndpoint)
	setString(&o.ImageServiceEndpoint, kc.ImageServiceEndpoint)
	setString(&o.TLSMinVersion, kc.TLSMinVersion)
	if len(kc.TLSCipherSuites) > 0 {
		o.TLSCipherSuites = kc.TLSCipherSuites
	}
	if len(kc.RegisterWithTaints) > 0 {
		o.RegisterWithTaints = kc.RegisterWithTaints
	}
	// A written 0s is upstream's "do not cache" too, but v1beta1 defaulting
	// cannot tell it from unset; neither can nodelet.
	setNonZero(&o.WebhookTokenCacheTTL, kc.Authentication.Webhook.CacheTTL.Duration)
	setNonZero(&o.AuthzCacheAuthorizedTTL, kc.Authorization.Webhook.CacheAuthorizedTTL.Duration)
	setNonZero(&o.AuthzCacheUnauthorizedTTL, kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration)
	setPtr(&o.EnableDebuggingHandlers, kc.EnableDebuggingHandlers)
	setPtr(&o.EnableProfilingHandler, kc.EnableProfilingHandler)
	setPtr(&o.EnableSystemLogHandler, kc.EnableSystemLogHandler)
	setPtr(&o.EnableSystemLogQuery, kc.EnableSystemLogQuery)
	setPtr(&o.EnableDebugFlagsHandler, kc.EnableDebugFlagsHandler)
	setNonZero(&o.StreamingConnectionIdleTimeout, kc.StreamingConnectionIdleTimeout.Duration)
	setNonZero(&o.RotateCertificates, kc.RotateCertificates)
	setNonZero(&o.ServerTLSBootstrap, kc.ServerTLSBootstrap)
	setPtr(&o.CgroupsPerQOS, kc.CgroupsPerQOS)
	setString(&o.CgroupRoot, kc.CgroupRoot)
	setString(&o.CgroupDriver, kc.CgroupDriver)
	setPtr(&o.PodPidsLimit, kc.PodPidsLimit)
	if kc.Tracing != nil {
		o.Tracing = kc.Tracing.DeepCopy()
	}
	applyAllocatableConfig(o, kc)
}

func setString(dst *string, v string) { setNonZero(dst, v) }

func setNonZero[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

func setPtr[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
