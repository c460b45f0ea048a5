package security

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// appArmorRequired reports whether any profile other than unconfined is
// asked for, by the pod's or a container's field or by the deprecated
// annotations. RuntimeDefault counts: a pod that asks for the runtime's
// AppArmor profile is not run without one.
func appArmorRequired(pod *v1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil &&
		sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
		return true
	}
	for _, c := range AllContainers(pod) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil &&
			sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
			return true
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) &&
			v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

func validateAppArmor(pod *v1.Pod, enabled bool) error {
	if !appArmorRequired(pod) {
		return nil
	}
	if !enabled {
		return errors.New("AppArmor is not enabled on the host")
	}
	for _, c := range AllContainers(pod) {
		p := AppArmorProfile(pod, c)
		if p != nil && p.Type == v1.AppArmorProfileTypeLocalhost &&
			(p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
			return fmt.Errorf("invalid empty AppArmor profile name: %q", p)
		}
	}
	return nil
}

// AppArmorProfile is a container's profile: its own field, else the
// deprecated per-container annotation (static pods may still use it), else
// the pod's field; nil if none is set.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if v, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case v == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case v == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
		// An unknown annotation value: the API server refuses it for API
		// pods; for a static pod fall through to the pod's profile.
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil {
		return sc.AppArmorProfile
	}
	return nil
}

// AppArmorSecurityProfile converts a container's AppArmor profile for the
// CRI: the profile and the deprecated string form older runtimes read.
// nil means none was asked for.
func AppArmorSecurityProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	default:
		return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
	}
}
