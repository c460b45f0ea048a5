package options

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// KubeletConfiguration is the configuration nodelet runs with, as the
// v1beta1 KubeletConfiguration that /configz serves. It holds exactly the
// fields nodelet honours (supportedConfigFields), with the values in effect
// after flags, file and defaults were merged; a field nodelet does not
// honour is left out rather than shown at upstream's default, which would
// claim behaviour nodelet does not have. It is the inverse of
// applyConfigFile, and the tests hold the two together.
func (o *Options) KubeletConfiguration() *kubeletconfigv1beta1.KubeletConfiguration {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	kc.APIVersion, kc.Kind = kubeletconfigv1beta1.SchemeGroupVersion.String(), "KubeletConfiguration"
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	i32 := func(v int) *int32 { n := int32(v); return &n }
	b := func(v bool) *bool { return &v }

	kc.EnableServer = b(o.EnableServer)
	kc.StaticPodPath = o.StaticPodPath
	kc.PodLogsDir = o.PodLogsDir
	kc.ShutdownGracePeriod = dur(o.ShutdownGracePeriod)
	kc.ShutdownGracePeriodCriticalPods = dur(o.ShutdownGracePeriodCriticalPods)
	kc.SyncFrequency = dur(o.SyncFrequency)
	kc.FileCheckFrequency = dur(o.FileCheckFrequency)
	kc.HTTPCheckFrequency = dur(o.HTTPCheckFrequency)
	kc.StaticPodURL = o.StaticPodURL
	kc.StaticPodURLHeader = o.StaticPodURLHeader
	kc.Address = o.Address
	kc.Port = int32(o.Port)
	kc.ReadOnlyPort = int32(o.ReadOnlyPort)
	kc.TLSCertFile = o.TLSCertFile
	kc.TLSPrivateKeyFile = o.TLSPrivateKeyFile
	kc.Authentication.X509.ClientCAFile = o.ClientCAFile
	kc.Authentication.Webhook.Enabled = b(o.WebhookAuthentication)
	kc.Authentication.Webhook.CacheTTL = dur(o.WebhookTokenCacheTTL)
	kc.Authentication.Anonymous.Enabled = b(o.AnonymousAuth)
	kc.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationMode(o.AuthorizationMode)
	kc.Authorization.Webhook.CacheAuthorizedTTL = dur(o.AuthzCacheAuthorizedTTL)
	kc.Authorization.Webhook.CacheUnauthorizedTTL = dur(o.AuthzCacheUnauthorizedTTL)
	kc.HealthzPort = i32(o.HealthzPort)
	kc.HealthzBindAddress = o.HealthzBindAddress
	kc.ClusterDomain = o.ClusterDomain
	kc.ClusterDNS = o.ClusterDNS
	kc.NodeStatusUpdateFrequency = dur(o.NodeStatusUpdateFrequency)
	kc.NodeLeaseDurationSeconds = int32(o.NodeLeaseDurationSeconds)
	kc.ImageMinimumGCAge = dur(o.ImageMinimumGCAge)
	kc.ImageGCHighThresholdPercent = i32(o.ImageGCHighThresholdPercent)
	kc.ImageGCLowThresholdPercent = i32(o.ImageGCLowThresholdPercent)
	kc.MaxPods = int32(o.MaxPods)
	kc.ResolverConfig = &o.ResolvConf
	kc.SeccompDefault = b(o.SeccompDefault)
	kc.AllowedUnsafeSysctls = o.AllowedUnsafeSysctls
	kc.ContainerLogMaxSize = o.ContainerLogMaxSize
	kc.ContainerLogMaxFiles = i32(o.ContainerLogMaxFiles)
	kc.Logging.Verbosity = logsapi.VerbosityLevel(o.Verbosity)
	kc.RegisterNode = b(o.RegisterNode)
	kc.ProviderID = o.ProviderID
	kc.ContainerRuntimeEndpoint = o.ContainerRuntimeEndpoint
	kc.ImageServiceEndpoint = o.ImageServiceEndpoint
	kc.TLSMinVersion = o.TLSMinVersion
	kc.TLSCipherSuites = o.TLSCipherSuites
	kc.RegisterWithTaints = o.RegisterWithTaints
	kc.EnableDebuggingHandlers = b(o.EnableDebuggingHandlers)
	kc.EnableProfilingHandler = b(o.EnableProfilingHandler)
	kc.EnableSystemLogHandler = b(o.EnableSystemLogHandler)
	kc.EnableSystemLogQuery = b(o.EnableSystemLogQuery)
	kc.EnableDebugFlagsHandler = b(o.EnableDebugFlagsHandler)
	kc.StreamingConnectionIdleTimeout = dur(o.StreamingConnectionIdleTimeout)
	kc.CgroupsPerQOS = b(o.CgroupsPerQOS)
	kc.CgroupRoot = o.CgroupRoot
	kc.CgroupDriver = o.CgroupDriver
	pids := o.PodPidsLimit
	kc.PodPidsLimit = &pids
	if o.Tracing != nil {
		kc.Tracing = o.Tracing.DeepCopy()
	}
	o.allocatableConfig(kc)
	kc.RotateCertificates = o.RotateCertificates
	kc.ServerTLSBootstrap = o.ServerTLSBootstrap
	return kc
}
