package config

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default values the API server fills in on pod create. Manifests from files
// and URLs never go through an API server, yet the rest of nodelet (and the
// mirror pod the API server will see) expects a defaulted spec.
const (
	DefaultTerminationGracePeriodSeconds int64 = 30
	DefaultSchedulerName                       = "default-scheduler"
	DefaultTerminationMessagePath              = "/dev/termination-log"
	defaultVolumeMode                    int32 = 0o644
)

// WithDefaults returns a deep copy of p with the defaults the API server
// would apply on create. p is not modified.
func WithDefaults(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	setSpecDefaults(&p.Spec)
	return p
}

func setSpecDefaults(s *v1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = v1.RestartPolicyAlways
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(DefaultTerminationGracePeriodSeconds)
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = v1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &v1.PodSecurityContext{}
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(v1.DefaultEnableServiceLinks)
	}
	for i := range s.InitContainers {
		setContainerDefaults(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		setContainerDefaults(&s.Containers[i], s.HostNetwork)
	}
	for i := range s.Volumes {
		setVolumeDefaults(&s.Volumes[i])
	}
}

func setContainerDefaults(c *v1.Container, hostNetwork bool) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		// With the host's network namespace the container port is the host
		// port; the API server records that so port conflicts are visible.
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	setResourceDefaults(&c.Resources)
	for _, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(pr)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				setHTTPGetDefaults(h.HTTPGet)
			}
		}
	}
}

// setResourceDefaults copies limits into missing requests: a container that
// only states a limit is guaranteed that much.
func setResourceDefaults(r *v1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = v1.ResourceList{}
		}
		r.Requests[name] = limit.DeepCopy()
	}
}

func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setHTTPGetDefaults(p.HTTPGet)
}

func setHTTPGetDefaults(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

func setVolumeDefaults(v *v1.Volume) {
	s := &v.VolumeSource
	if volumeSourceCount(s) == 0 {
		s.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	switch {
	case s.Secret != nil && s.Secret.DefaultMode == nil:
		s.Secret.DefaultMode = ptr(defaultVolumeMode)
	case s.ConfigMap != nil && s.ConfigMap.DefaultMode == nil:
		s.ConfigMap.DefaultMode = ptr(defaultVolumeMode)
	case s.DownwardAPI != nil && s.DownwardAPI.DefaultMode == nil:
		s.DownwardAPI.DefaultMode = ptr(defaultVolumeMode)
	case s.Projected != nil && s.Projected.DefaultMode == nil:
		s.Projected.DefaultMode = ptr(defaultVolumeMode)
	case s.HostPath != nil && s.HostPath.Type == nil:
		s.HostPath.Type = ptr(v1.HostPathUnset)
	}
	if s.DownwardAPI != nil {
		for i := range s.DownwardAPI.Items {
			if f := s.DownwardAPI.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	}
}

// DefaultPullPolicy is the pull policy the API server picks for an image
// without one: Always for ":latest" or an untagged, undigested reference
// (which means latest), IfNotPresent for anything pinned.
func DefaultPullPolicy(image string) v1.PullPolicy {
	tag, digest := imageTagAndDigest(image)
	if tag == "latest" || (tag == "" && !digest) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTagAndDigest splits an image reference just enough to find its tag;
// a ':' before the last '/' is a registry port, not a tag.
func imageTagAndDigest(image string) (tag string, digest bool) {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image, digest = image[:i], true
	}
	name := image[strings.LastIndexByte(image, '/')+1:]
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		tag = name[i+1:]
	}
	return tag, digest
}

func ptr[T any](v T) *T { return &v }
