package security

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ReasonSysctlForbidden is the admission reason of a pod with a sysctl
// that is neither safe nor allowed by --allowed-unsafe-sysctls.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the sysctls every pod may set: namespaced by the kernel
// and without effect on other pods. Some became namespaced only with a
// kernel version (minKernel); on older kernels they would change the node.
var safeSysctls = []struct {
	name      string
	minKernel string
}{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", minKernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", minKernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", minKernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", minKernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", minKernel: "4.5"},
	{name: "net.ipv4.tcp_rmem"},
	{name: "net.ipv4.tcp_wmem"},
}

// SafeSysctls returns the safe sysctls available on a kernel of the given
// version ("" or unparsable: only those without a minimum version).
func SafeSysctls(kernel string) []string {
	kv, _ := version.ParseGeneric(kernel)
	var out []string
	for _, s := range safeSysctls {
		if s.minKernel != "" && (kv == nil || !kv.AtLeast(version.MustParseGeneric(s.minKernel))) {
			continue
		}
		out = append(out, s.name)
	}
	return out
}

// sysctlPattern is the API's sysctl name syntax ('.' or '/' separated
// segments), optionally ending in '*' for a prefix.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

const maxSysctlLength = 253

// SysctlAllowlist says which sysctls pods may set: the safe ones plus the
// node's --allowed-unsafe-sysctls patterns.
type SysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewSysctlAllowlist builds the allowlist from sysctl names and patterns
// ending in '*'. Every entry must be known to be namespaced: allowing a
// node-level sysctl would let a pod change the node, so it is an error.
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > maxSysctlLength || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, maxSysctlLength, sysctlPattern)
		}
		ns, name, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", name)
		}
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// check returns why a pod may not set sysctl, or nil. A namespaced sysctl
// is still refused when the pod shares that namespace with the node.
func (w *SysctlAllowlist) check(sysctl string, hostNet, hostIPC, hostUsers bool) error {
	sysctl = utilsysctl.NormalizeName(sysctl)
	ns, ok := w.names[sysctl]
	if !ok {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(sysctl, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", sysctl)
	}
	if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) ||
		(ns == utilsysctl.UserNamespace && hostUsers) {
		return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
	}
	return nil
}

// AdmitSysctls refuses a pod that sets a sysctl the allowlist does not
// allow it.
func (w *SysctlAllowlist) AdmitSysctls(pod *v1.Pod) *Rejection {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range sc.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return &Rejection{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return nil
}
