package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePod checks a defaulted pod for the mistakes a hand-written manifest
// makes, with field paths ("spec.containers[1].name: Duplicate value: "app"").
// It is not a port of the API server's validation: it covers what would make
// the pod fail to run or confuse the rest of nodelet.
func ValidatePod(p *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	errs = append(errs, validateDNS(p.Name, meta.Child("name"), validation.IsDNS1123Subdomain)...)
	errs = append(errs, validateDNS(p.Namespace, meta.Child("namespace"), validation.IsDNS1123Label)...)
	errs = append(errs, metavalidation.ValidateLabels(p.Labels, meta.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(p.Annotations, meta.Child("annotations"))...)
	errs = append(errs, validateSpec(&p.Spec, field.NewPath("spec"))...)
	return errs
}

func validateDNS(value string, path *field.Path, check func(string) []string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range check(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

var (
	restartPolicies = sets.New(string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever))
	dnsPolicies     = sets.New(string(v1.DNSClusterFirst), string(v1.DNSClusterFirstWithHostNet), string(v1.DNSDefault), string(v1.DNSNone))
	pullPolicies    = sets.New(string(v1.PullAlways), string(v1.PullIfNotPresent), string(v1.PullNever))
	msgPolicies     = sets.New(string(v1.TerminationMessageReadFile), string(v1.TerminationMessageFallbackToLogsOnError))
	protocols       = sets.New(string(v1.ProtocolTCP), string(v1.ProtocolUDP), string(v1.ProtocolSCTP))
)

func validateSpec(s *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	volumes, verrs := validateVolumes(s.Volumes, path.Child("volumes"))
	errs = append(errs, verrs...)

	// Container names share one namespace across init and app containers:
	// they key logs, statuses and the runtime's container identity.
	names := sets.New[string]()
	hostPorts := sets.New[string]()
	for i := range s.InitContainers {
		c := &s.InitContainers[i]
		errs = append(errs, validateContainer(c, path.Child("initContainers").Index(i), names, hostPorts, volumes, s.HostNetwork)...)
	}
	for i := range s.Containers {
		c := &s.Containers[i]
		errs = append(errs, validateContainer(c, path.Child("containers").Index(i), names, hostPorts, volumes, s.HostNetwork)...)
	}

	// As the API server on create: ephemeral containers are only ever added
	// to a running API pod through its ephemeralcontainers subresource. A
	// manifest's would run unchecked (names, targets) beside its containers.
	if len(s.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if !restartPolicies.Has(string(s.RestartPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), s.RestartPolicy, sets.List(restartPolicies)))
	}
	if !dnsPolicies.Has(string(s.DNSPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), s.DNSPolicy, sets.List(dnsPolicies)))
	}
	if s.DNSPolicy == v1.DNSNone && (s.DNSConfig == nil || len(s.DNSConfig.Nameservers) == 0) {
		errs = append(errs, field.Required(path.Child("dnsConfig", "nameservers"), "at least one nameserver is required when dnsPolicy is None"))
	}
	errs = append(errs, validateNames(s, path)...)
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := s.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}
	return errs
}

// validateNames checks what ends up in the pod's hostname and managed
// /etc/hosts, as the API server does.
func validateNames(s *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Hostname != "" {
		errs = append(errs, validateDNS(s.Hostname, path.Child("hostname"), validation.IsDNS1123Label)...)
	}
	if s.Subdomain != "" {
		errs = append(errs, validateDNS(s.Subdomain, path.Child("subdomain"), validation.IsDNS1123Label)...)
	}
	for i, a := range s.HostAliases {
		p := path.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIP(p.Child("ip"), a.IP)...)
		for j, h := range a.Hostnames {
			errs = append(errs, validateDNS(h, p.Child("hostnames").Index(j), validation.IsDNS1123Subdomain)...)
		}
	}
	return errs
}

// validateVolumes returns the set of declared volume names for the mounts to
// be checked against.
func validateVolumes(vols []v1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range vols {
		v := &vols[i]
		p := path.Index(i)
		errs = append(errs, validateDNS(v.Name, p.Child("name"), validation.IsDNS1123Label)...)
		if v.Name != "" && names.Has(v.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		names.Insert(v.Name)
		switch n := volumeSourceCount(&v.VolumeSource); {
		case n == 0:
			errs = append(errs, field.Required(p, "must specify a volume type"))
		case n > 1:
			errs = append(errs, field.Forbidden(p, "may not specify more than 1 volume type"))
		}
		if v.HostPath != nil && !strings.HasPrefix(v.HostPath.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("hostPath", "path"), v.HostPath.Path, "must be an absolute path"))
		}
	}
	return names, errs
}

// volumeSourceCount counts the volume types set; VolumeSource is a struct of
// pointers, one per type, of which exactly one must be set.
func volumeSourceCount(s *v1.VolumeSource) int {
	n := 0
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func validateContainer(c *v1.Container, path *field.Path, names, hostPorts, volumes sets.Set[string], hostNetwork bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateDNS(c.Name, path.Child("name"), validation.IsDNS1123Label)...)
	if c.Name != "" && names.Has(c.Name) {
		errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
	}
	names.Insert(c.Name)

	switch {
	case strings.TrimSpace(c.Image) == "":
		errs = append(errs, field.Required(path.Child("image"), ""))
	case strings.TrimSpace(c.Image) != c.Image:
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	if !pullPolicies.Has(string(c.ImagePullPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, sets.List(pullPolicies)))
	}
	if !msgPolicies.Has(string(c.TerminationMessagePolicy)) {
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, sets.List(msgPolicies)))
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"), hostPorts, hostNetwork)...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateMounts(c.VolumeMounts, path.Child("volumeMounts"), volumes)...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	return errs
}

func validatePorts(ports []v1.ContainerPort, path *field.Path, hostPorts sets.Set[string], hostNetwork bool) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range ports {
		pt := &ports[i]
		p := path.Index(i)
		if pt.Name != "" {
			for _, msg := range validation.IsValidPortName(pt.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), pt.Name, msg))
			}
			if names.Has(pt.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), pt.Name))
			}
			names.Insert(pt.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(pt.ContainerPort)) {
			errs = append(errs, field.Invalid(p.Child("containerPort"), pt.ContainerPort, msg))
		}
		if pt.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(pt.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), pt.HostPort, msg))
			}
			if hostNetwork && pt.HostPort != pt.ContainerPort {
				errs = append(errs, field.Invalid(p.Child("hostPort"), pt.HostPort, "must match containerPort when hostNetwork is true"))
			}
			// Two containers binding the same host port: the second would
			// fail at runtime with a far less helpful message.
			key := fmt.Sprintf("%s/%s/%d", pt.Protocol, pt.HostIP, pt.HostPort)
			if hostPorts.Has(key) {
				errs = append(errs, field.Duplicate(p.Child("hostPort"), key))
			}
			hostPorts.Insert(key)
		}
		if !protocols.Has(string(pt.Protocol)) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), pt.Protocol, sets.List(protocols)))
		}
	}
	return errs
}

func validateEnv(env []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range env {
		e := &env[i]
		p := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
			}
		}
		if e.ValueFrom == nil {
			continue
		}
		if e.Value != "" {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
		n := 0
		vf := reflect.ValueOf(e.ValueFrom).Elem()
		for j := range vf.NumField() {
			if f := vf.Field(j); f.Kind() == reflect.Pointer && !f.IsNil() {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "must specify exactly one source"))
		}
	}
	return errs
}

func validateMounts(mounts []v1.VolumeMount, path *field.Path, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i := range mounts {
		m := &mounts[i]
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		case paths.Has(m.MountPath):
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
	}
	return errs
}

func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(r.Limits) {
		if q := r.Limits[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		q := r.Requests[name]
		p := path.Child("requests").Key(string(name))
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
		if limit, ok := r.Limits[name]; ok && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func sortedResourceNames(l v1.ResourceList) []v1.ResourceName {
	return slices.Sorted(maps.Keys(l))
}
