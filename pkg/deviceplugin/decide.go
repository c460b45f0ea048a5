package deviceplugin

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// ReasonUnexpectedAdmissionError is upstream's pod status reason when the
// devices a pod asks for cannot be allocated at admission.
const ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

// EndpointStopGracePeriod is how long the devices of a plugin whose socket
// went away stay in the node's capacity (unhealthy) before the resource is
// removed, as upstream's endpointStopGracePeriod.
const EndpointStopGracePeriod = 5 * time.Minute

// ValidateRegistration checks a RegisterRequest as upstream does: a
// supported version, an extended resource name, and an endpoint that is a
// socket name in the device-plugins dir (no path), other than the
// registration socket itself.
func ValidateRegistration(r *pluginapi.RegisterRequest) error {
	if !slices.Contains(pluginapi.SupportedVersions[:], r.GetVersion()) {
		return fmt.Errorf("requested device plugin API version %q is not supported by nodelet; supported versions are %v", r.GetVersion(), pluginapi.SupportedVersions)
	}
	if !IsExtendedResourceName(r.GetResourceName()) {
		return fmt.Errorf("invalid extended resource name %q", r.GetResourceName())
	}
	e := r.GetEndpoint()
	if e == "" || e == "." || e == ".." || filepath.Base(e) != e || strings.ContainsRune(e, 0) {
		return fmt.Errorf("invalid endpoint %q: it must be the name of a socket in the device plugin directory", e)
	}
	if e == RegistrationSocket {
		return fmt.Errorf("invalid endpoint %q: it is the registration socket", e)
	}
	return nil
}

// RegistrationSocket is the name of nodelet's registration socket in the
// device-plugins dir.
const RegistrationSocket = "kubelet.sock"

// IsExtendedResourceName is upstream's rule: a qualified name with a domain
// outside kubernetes.io, not starting with "requests.", that is also valid
// as a quota name ("requests." + name).
func IsExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/") {
		return false
	}
	if strings.HasPrefix(name, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+name)) == 0
}

// Counts are a resource's figures in the node status.
type Counts struct {
	Capacity, Allocatable int64
}

// ResourceState is what the manager knows of one resource's devices.
type ResourceState struct {
	Healthy, Unhealthy []string
	// Stopped is when the plugin's endpoint went away (zero: serving).
	Stopped time.Time
}

// NodeCounts are the node's device figures at now: capacity every device,
// allocatable the healthy ones; a resource whose plugin stopped more than
// the grace period ago has 0 of both (upstream reports it so until the
// resource is gone from the node). The second result names those expired
// resources.
func NodeCounts(states map[string]ResourceState, now time.Time) (map[v1.ResourceName]Counts, []string) {
	out := map[v1.ResourceName]Counts{}
	var expired []string
	for name, s := range states {
		if !s.Stopped.IsZero() && now.Sub(s.Stopped) >= EndpointStopGracePeriod {
			out[v1.ResourceName(name)] = Counts{}
			expired = append(expired, name)
			continue
		}
		healthy := int64(len(s.Healthy))
		if !s.Stopped.IsZero() {
			healthy = 0
		}
		out[v1.ResourceName(name)] = Counts{Capacity: int64(len(s.Healthy) + len(s.Unhealthy)), Allocatable: healthy}
	}
	slices.Sort(expired)
	return out, expired
}

// Free are the healthy devices no container holds, sorted.
func Free(healthy []string, allocated map[string]bool) []string {
	var out []string
	for _, d := range healthy {
		if !allocated[d] {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Pick chooses n devices from free: the plugin's preferred ones first
// (those that are free, in its order), then the rest in sorted order. It
// fails, as upstream, when fewer than n are free.
func Pick(resource string, free []string, n int, preferred []string) ([]string, error) {
	if n > len(free) {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", resource, n, len(free))
	}
	isFree := map[string]bool{}
	for _, d := range free {
		isFree[d] = true
	}
	var out []string
	take := func(d string) {
		if len(out) < n && isFree[d] {
			out = append(out, d)
			delete(isFree, d)
		}
	}
	for _, d := range preferred {
		take(d)
	}
	for _, d := range free {
		take(d)
	}
	return out, nil
}

// DeviceRequests are the device-plugin resources a container asks for:
// its limits (upstream reads limits; requests equal them for extended
// resources) of the resources in known, with a positive integer count.
func DeviceRequests(c *v1.Container, known func(string) bool) (map[string]int, error) {
	out := map[string]int{}
	for name, q := range c.Resources.Limits {
		if !known(string(name)) {
			continue
		}
		v, ok := q.AsInt64()
		if !ok || v < 0 || v > 1<<20 {
			return nil, fmt.Errorf("container %q: %s must be a whole number of devices, got %s", c.Name, name, q.String())
		}
		if v > 0 {
			out[string(name)] = int(v)
		}
	}
	return out, nil
}

// DirName is the device-plugins dir under nodelet's root dir.
const DirName = "device-plugins"
