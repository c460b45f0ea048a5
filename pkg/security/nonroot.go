package security

import (
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
)

// RunAsNonRoot and RunAsUser of a container: its own settings override
// the pod's.
func effectiveUser(pod *v1.Pod, c *v1.Container) (nonRoot bool, uid *int64) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		nonRoot = sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
		uid = sc.RunAsUser
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
	}
	return nonRoot, uid
}

// VerifyRunAsNonRoot refuses a container with runAsNonRoot that would run
// as root: by its runAsUser, else by its image's user (imageUID, or
// imageUser when the image names its user instead: that cannot be checked,
// so it is refused too). The container then waits with
// CreateContainerConfigError; the pod itself is admitted.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, imageUID *int64, imageUser string) error {
	nonRoot, uid := effectiveUser(pod, c)
	if !nonRoot {
		return nil
	}
	desc := podDesc(pod)
	if uid != nil {
		if *uid == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", desc, c.Name)
		}
		return nil
	}
	switch {
	case imageUID == nil && imageUser != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", imageUser, desc, c.Name)
	case imageUID == nil:
		// The image names no user: it runs as root.
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", desc, c.Name)
	case *imageUID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", desc, c.Name)
	case *imageUID < 0 || *imageUID > math.MaxInt32:
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)) (pod: %q, container: %s)", *imageUID, math.MaxInt32, desc, c.Name)
	}
	return nil
}

// podDesc formats a pod as upstream's messages do: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// NeedsImageUser reports whether a container's config depends on its
// image's user: it names no user but asks for runAsNonRoot (checked against
// the image) or a group (which the runtime accepts only with a user).
func NeedsImageUser(pod *v1.Pod, c *v1.Container) bool {
	nonRoot, uid := effectiveUser(pod, c)
	if uid != nil {
		return false
	}
	group := pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsGroup != nil ||
		c.SecurityContext != nil && c.SecurityContext.RunAsGroup != nil
	return nonRoot || group
}
