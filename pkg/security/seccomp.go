package security

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Seccomp is how seccomp profiles are chosen on the node.
type Seccomp struct {
	// Root holds Localhost profiles (<root-dir>/seccomp).
	Root string
	// Default is --seccomp-default: RuntimeDefault, not Unconfined, for a
	// container that asks for nothing.
	Default bool
}

// Profile returns the profile of a container (c) or, with c nil, of the
// pod sandbox: the container's field, else the pod's, else the node's
// default.
func (s Seccomp) Profile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, error) {
	var p *v1.SeccompProfile
	if c != nil && c.SecurityContext != nil {
		p = c.SecurityContext.SeccompProfile
	}
	if p == nil && pod.Spec.SecurityContext != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	if p == nil {
		if s.Default {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost")
		}
		path, err := s.localhostPath(*p.LocalhostProfile)
		if err != nil {
			return nil, err
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: path}, nil
	default:
		return nil, fmt.Errorf("unknown seccomp profile type %q", p.Type)
	}
}

// localhostPath places a Localhost profile under Root. The name comes from
// the pod: it must be a relative path that stays inside Root, as the API
// server's validation demands of API pods (static pods skip that).
func (s Seccomp) localhostPath(name string) (string, error) {
	if s.Root == "" {
		return "", errors.New("seccomp profile root is not set")
	}
	if filepath.IsAbs(name) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("seccomp localhostProfile %q must be a relative path under %s", name, s.Root)
	}
	for _, part := range strings.Split(filepath.ToSlash(name), "/") {
		if part == ".." {
			return "", fmt.Errorf("seccomp localhostProfile %q must not contain '..'", name)
		}
	}
	path := filepath.Join(s.Root, name)
	if path == filepath.Clean(s.Root) {
		return "", fmt.Errorf("seccomp localhostProfile %q names the profile directory, not a profile", name)
	}
	return path, nil
}
