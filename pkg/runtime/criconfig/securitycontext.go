package criconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/security"
)

// ErrUserNamespaces: the pod asks for its own user namespace
// (hostUsers: false), which nodelet cannot give it on this runtime.
var ErrUserNamespaces = errors.New("can't set `spec.hostUsers: false`, runtime does not support user namespaces")

// errUserNamespaceMappings: the runtime could, but nodelet does not
// allocate the pod's user and group ID ranges.
var errUserNamespaceMappings = fmt.Errorf("%w: nodelet does not allocate user namespace ID mappings", errors.ErrUnsupported)

// seccomp is how the node picks seccomp profiles.
func (o ConfigOptions) seccomp() security.Seccomp {
	return security.Seccomp{Root: filepath.Join(o.RootDir, "seccomp"), Default: o.SeccompDefault}
}

// sandboxSecurityContext is the pod-level part of the security context:
// user and groups, SELinux, the pod's seccomp profile, and privileged when
// any container is (the runtime refuses a privileged container in an
// unprivileged sandbox).
func sandboxSecurityContext(pod *v1.Pod, opts ConfigOptions) (*runtimeapi.LinuxSandboxSecurityContext, error) {
	ns, err := podNamespaces(pod, opts)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.RunAsUser = int64Value(psc.RunAsUser)
		sc.RunAsGroup = int64Value(psc.RunAsGroup)
		sc.SupplementalGroups = supplementalGroups(psc)
		sc.SupplementalGroupsPolicy = groupsPolicy(psc)
		sc.SelinuxOptions = selinuxOption(psc.SELinuxOptions)
	}
	for _, c := range allContainers(pod) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	if sc.Seccomp, err = opts.seccomp().Profile(pod, nil); err != nil {
		return nil, err
	}
	return sc, nil
}

// containerSecurityContext is the effective security context of a
// container: its own settings over the pod's, the image's user where
// neither names one, and every field the API has, or an error for what
// cannot be honoured (a bad seccomp or AppArmor profile). runAsNonRoot is
// checked by ContainerConfig.
func containerSecurityContext(pod *v1.Pod, c *v1.Container, p ContainerParams, opts ConfigOptions) (*runtimeapi.LinuxContainerSecurityContext, error) {
	ns, err := podNamespaces(pod, opts)
	if err != nil {
		return nil, err
	}
	if p.TargetContainerID != "" && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		// An ephemeral container with a target sees the target's
		// processes. A pod sharing one process namespace (or the node's)
		// already gives it that.
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, p.TargetContainerID
	}
	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns}
	var procMount *v1.ProcMountType
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.RunAsUser = int64Value(psc.RunAsUser)
		sc.RunAsGroup = int64Value(psc.RunAsGroup)
		sc.SelinuxOptions = selinuxOption(psc.SELinuxOptions)
		sc.SupplementalGroups = supplementalGroups(psc)
		sc.SupplementalGroupsPolicy = groupsPolicy(psc)
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			sc.RunAsUser = int64Value(csc.RunAsUser)
		}
		if csc.RunAsGroup != nil {
			sc.RunAsGroup = int64Value(csc.RunAsGroup)
		}
		if csc.SELinuxOptions != nil {
			sc.SelinuxOptions = selinuxOption(csc.SELinuxOptions)
		}
		if csc.Privileged != nil {
			sc.Privileged = *csc.Privileged
		}
		if csc.ReadOnlyRootFilesystem != nil {
			sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
		}
		if csc.AllowPrivilegeEscalation != nil {
			sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
		}
		if caps := csc.Capabilities; caps != nil {
			sc.Capabilities = &runtimeapi.Capability{}
			for _, a := range caps.Add {
				sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
			}
			for _, d := range caps.Drop {
				sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
			}
		}
		procMount = csc.ProcMount
	}
	// A container that names no user runs as the image's, given to the
	// runtime explicitly so that runAsGroup alone is valid too.
	if sc.RunAsUser == nil {
		switch {
		case p.ImageUID != nil:
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *p.ImageUID}
		case p.ImageUser != "":
			sc.RunAsUsername = p.ImageUser
		}
	}
	if procMount != nil && *procMount == v1.UnmaskedProcMount {
		// Empty lists: nothing of /proc masked or read-only.
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	} else {
		masked := opts.MaskedPaths
		if masked == nil {
			masked = MaskedPaths()
		}
		sc.MaskedPaths, sc.ReadonlyPaths = masked, defaultReadonlyPaths
	}
	if sc.Seccomp, err = opts.seccomp().Profile(pod, c); err != nil {
		return nil, err
	}
	if sc.Apparmor, sc.ApparmorProfile, err = security.AppArmorSecurityProfile(pod, c); err != nil {
		return nil, err
	}
	return sc, nil
}

// podNamespaces is namespaceOptions plus the user namespace: the node's,
// or a refusal for hostUsers: false. That needs a runtime that supports
// user namespaces (containerd 1.6 does not) and ID mappings per pod, which
// nodelet does not allocate: the pod is refused rather than run in the
// node's user namespace.
func podNamespaces(pod *v1.Pod, opts ConfigOptions) (*runtimeapi.NamespaceOption, error) {
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		if opts.UserNamespaces {
			return nil, fmt.Errorf("can't set `spec.hostUsers: false`: %w", errUserNamespaceMappings)
		}
		return nil, ErrUserNamespaces
	}
	return namespaceOptions(pod), nil
}

func int64Value(v *int64) *runtimeapi.Int64Value {
	if v == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *v}
}

func supplementalGroups(psc *v1.PodSecurityContext) []int64 {
	var g []int64
	if psc.FSGroup != nil {
		g = append(g, *psc.FSGroup)
	}
	return append(g, psc.SupplementalGroups...)
}

func groupsPolicy(psc *v1.PodSecurityContext) runtimeapi.SupplementalGroupsPolicy {
	if psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		return runtimeapi.SupplementalGroupsPolicy_Strict
	}
	return runtimeapi.SupplementalGroupsPolicy_Merge
}

func selinuxOption(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// The /proc and /sys paths a container with the default procMount must
// not see or write, the list runtimes (moby, containerd) use.
var (
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	defaultMaskedPaths   = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
)

// MaskedPaths returns what a container with the default procMount has
// masked: the runtimes' list and nodePaths, the node's per-CPU thermal
// throttle counters, which leak host activity (found by the caller, as
// they differ from node to node).
func MaskedPaths(nodePaths ...string) []string {
	return append(slices.Clone(defaultMaskedPaths), nodePaths...)
}
