package options

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/pkg/eviction"
)

// The --enforce-node-allocatable levels, as upstream names them.
const (
	EnforcePods           = "pods"
	EnforceSystemReserved = "system-reserved"
	EnforceKubeReserved   = "kube-reserved"
	EnforceNone           = "none"
)

// ResourcePID is the reservable process-ID resource ("pid=1000").
const ResourcePID v1.ResourceName = "pid"

// allocatableFlagSpecs are the node allocatable flags of issue 17.
func allocatableFlagSpecs() []flagSpec {
	return []flagSpec{
		pairsFlag("kube-reserved", "pair", "=", "Resources reserved for Kubernetes daemons (nodelet, the runtime), as resource=quantity pairs separated by ',': cpu, memory, ephemeral-storage, pid. Taken out of node allocatable.",
			func(o *Options) *map[string]string { return &o.KubeReserved }),
		pairsFlag("system-reserved", "pair", "=", "Resources reserved for system daemons, as resource=quantity pairs separated by ',': cpu, memory, ephemeral-storage, pid. Taken out of node allocatable.",
			func(o *Options) *map[string]string { return &o.SystemReserved }),
		pairsFlag("eviction-hard", "pair", "<", "Hard eviction thresholds, as signal<value pairs separated by ','. nodelet does not evict yet: memory.available and nodefs.available are only taken out of node allocatable, as upstream does.",
			func(o *Options) *map[string]string { return &o.EvictionHard }),
		stringSliceFlag("enforce-node-allocatable", "Comma-separated levels of node allocatable enforcement: pods (limits on the kubepods cgroup), system-reserved, kube-reserved (limits on --system-reserved-cgroup / --kube-reserved-cgroup), or none. Needs --cgroups-per-qos.",
			func(o *Options) *[]string { return &o.EnforceNodeAllocatable }),
		stringFlag("kube-reserved-cgroup", "Existing cgroup (absolute cgroupfs path) of the Kubernetes daemons; --kube-reserved is enforced on it with --enforce-node-allocatable=kube-reserved.",
			func(o *Options) *string { return &o.KubeReservedCgroup }),
		stringFlag("system-reserved-cgroup", "Existing cgroup (absolute cgroupfs path) of the system daemons; --system-reserved is enforced on it with --enforce-node-allocatable=system-reserved.",
			func(o *Options) *string { return &o.SystemReservedCgroup }),
	}
}

// pairsFlag registers a map flag of key<sep>value pairs separated by ','
// (--node-labels, the reservations, --eviction-hard); what names a pair in
// errors. The first use replaces the default, later uses add to it and a
// later value for a key wins, as upstream's map flags.
func pairsFlag(name, what, sep, usage string, field func(*Options) *map[string]string) flagSpec {
	return flagSpec{
		name: name,
		register: func(fs *pflag.FlagSet, d *Options) {
			fs.Var(&pairsValue{what: what, sep: sep, m: maps.Clone(*field(d))}, name, usage)
		},
		apply: func(fs *pflag.FlagSet, o *Options) error {
			v, ok := fs.Lookup(name).Value.(*pairsValue)
			if !ok {
				return fmt.Errorf("--%s is registered with an unexpected type", name)
			}
			*field(o) = v.m
			return nil
		},
	}
}

type pairsValue struct {
	what, sep string
	m         map[string]string
	set       bool
}

func (p *pairsValue) Set(s string) error {
	if !p.set {
		p.m = map[string]string{}
		p.set = true
	}
	var m map[string]string
	if p.sep == "<" {
		var err error
		if m, err = eviction.ParseFlag(s); err != nil {
			return err
		}
	} else {
		m = map[string]string{}
		for _, pair := range strings.Split(s, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, v, ok := strings.Cut(pair, p.sep)
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return fmt.Errorf("malformed %s %q, want key%svalue", p.what, pair, p.sep)
			}
			m[k] = strings.TrimSpace(v)
		}
	}
	maps.Copy(p.m, m)
	return nil
}

func (p *pairsValue) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(p.m)) {
		pairs = append(pairs, k+p.sep+p.m[k])
	}
	return strings.Join(pairs, ",")
}

func (p *pairsValue) Type() string { return "key" + p.sep + "value" }

// applyAllocatableConfig copies the allocatable fields a file sets. A map
// or list the file sets, even empty, replaces the default: an empty
// evictionHard has no thresholds, an empty enforceNodeAllocatable enforces
// nothing (as upstream's defaulting, which fills in only nil ones).
func applyAllocatableConfig(o *Options, kc *kubeletconfigv1beta1.KubeletConfiguration) {
	if kc.KubeReserved != nil {
		o.KubeReserved = kc.KubeReserved
	}
	if kc.SystemReserved != nil {
		o.SystemReserved = kc.SystemReserved
	}
	if kc.EvictionHard != nil {
		o.EvictionHard = kc.EvictionHard
	}
	if kc.EnforceNodeAllocatable != nil {
		o.EnforceNodeAllocatable = kc.EnforceNodeAllocatable
	}
	setString(&o.KubeReservedCgroup, kc.KubeReservedCgroup)
	setString(&o.SystemReservedCgroup, kc.SystemReservedCgroup)
}

// allocatableConfig is applyAllocatableConfig's inverse, for /configz.
func (o *Options) allocatableConfig(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	kc.KubeReserved = o.KubeReserved
	kc.SystemReserved = o.SystemReserved
	kc.EvictionHard = o.EvictionHard
	if kc.EvictionHard == nil {
		kc.EvictionHard = map[string]string{}
	}
	kc.EnforceNodeAllocatable = o.EnforceNodeAllocatable
	if kc.EnforceNodeAllocatable == nil {
		kc.EnforceNodeAllocatable = []string{}
	}
	kc.KubeReservedCgroup = o.KubeReservedCgroup
	kc.SystemReservedCgroup = o.SystemReservedCgroup
}

// Enforces reports whether --enforce-node-allocatable holds level.
func (o *Options) Enforces(level string) bool {
	return slices.Contains(o.EnforceNodeAllocatable, level)
}

// ParseReserved parses a --kube-reserved / --system-reserved map. As
// upstream, only cpu, memory, ephemeral-storage and pid can be reserved,
// and no quantity may be negative.
func ParseReserved(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := v1.ResourceName(strings.TrimSpace(k))
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, ResourcePID:
		default:
			return nil, fmt.Errorf("cannot reserve %q resource (only cpu, memory, ephemeral-storage and pid)", k)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(m[k]))
		if err != nil {
			return nil, fmt.Errorf("reserved %s: bad quantity %q: %w", k, m[k], err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resource quantity for %q cannot be negative: %v", k, m[k])
		}
		out[name] = q
	}
	return out, nil
}

// validateAllocatable refuses what upstream refuses: bad reservations and
// thresholds, unknown enforcement levels, "none" with others, enforcing a
// reservation without its cgroup, enforcing anything without QoS cgroups.
func (o *Options) validateAllocatable() []error {
	var errs []error
	if _, err := ParseReserved(o.KubeReserved); err != nil {
		errs = append(errs, fmt.Errorf("--kube-reserved (kubeReserved): %w", err))
	}
	if _, err := ParseReserved(o.SystemReserved); err != nil {
		errs = append(errs, fmt.Errorf("--system-reserved (systemReserved): %w", err))
	}
	if _, err := eviction.ParseMap(o.EvictionHard); err != nil {
		errs = append(errs, fmt.Errorf("--eviction-hard (evictionHard): %w", err))
	}
	enforcing := false
	for _, level := range o.EnforceNodeAllocatable {
		switch level {
		case EnforcePods:
		case EnforceSystemReserved:
			if o.SystemReservedCgroup == "" {
				errs = append(errs, fmt.Errorf("invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when %q contained in enforceNodeAllocatable (--enforce-node-allocatable)", level))
			}
		case EnforceKubeReserved:
			if o.KubeReservedCgroup == "" {
				errs = append(errs, fmt.Errorf("invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when %q contained in enforceNodeAllocatable (--enforce-node-allocatable)", level))
			}
		case EnforceNone:
			if len(o.EnforceNodeAllocatable) > 1 {
				errs = append(errs, fmt.Errorf("invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when %q is specified", EnforceNone))
			}
			continue
		case "system-reserved-compressible", "kube-reserved-compressible":
			errs = append(errs, fmt.Errorf("enforceNodeAllocatable (--enforce-node-allocatable) %q is not supported by nodelet: enforce the whole reservation (%q) or none of it", level, strings.TrimSuffix(level, "-compressible")))
			continue
		default:
			errs = append(errs, fmt.Errorf("invalid configuration: option %q specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are %q, %q, %q, or %q",
				level, EnforcePods, EnforceSystemReserved, EnforceKubeReserved, EnforceNone))
			continue
		}
		enforcing = true
	}
	if enforcing && !o.CgroupsPerQOS {
		errs = append(errs, fmt.Errorf("invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) %v is not supported unless cgroupsPerQOS (--cgroups-per-qos) is true; use --enforce-node-allocatable=none (or an empty list) without it", o.EnforceNodeAllocatable))
	}
	for flag, cg := range map[string]string{"--kube-reserved-cgroup": o.KubeReservedCgroup, "--system-reserved-cgroup": o.SystemReservedCgroup} {
		if cg != "" && !strings.HasPrefix(cg, "/") {
			errs = append(errs, fmt.Errorf("%s (%q) must be an absolute cgroup path", flag, cg))
		}
	}
	return errs
}
