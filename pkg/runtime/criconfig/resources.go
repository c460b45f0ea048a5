package criconfig

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/pkg/pod"
)

// ResourceFieldValue resolves a resourceFieldRef (an env var's, or a
// downward API file's) for container c of pod, as upstream does: the
// container's limit or request of cpu, memory, ephemeral-storage or a huge
// page size, divided by the divisor (default 1) and rounded up. A limit
// that is not set reads as the node's allocatable amount (allocatable).
// sel.ContainerName, when set, names the container to read instead of c.
func ResourceFieldValue(p *v1.Pod, c *v1.Container, sel *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	if sel.ContainerName != "" && (c == nil || sel.ContainerName != c.Name) {
		c = nil
		for _, x := range allContainers(p) {
			if x.Name == sel.ContainerName {
				c = x
			}
		}
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q in the pod", sel.ContainerName)
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %q: no containerName", sel.Resource)
	}
	divisor := resource.MustParse("1")
	if !sel.Divisor.IsZero() {
		divisor = sel.Divisor
	}
	list, isLimit := c.Resources.Requests, false
	name, ok := strings.CutPrefix(sel.Resource, "requests.")
	if !ok {
		if name, ok = strings.CutPrefix(sel.Resource, "limits."); !ok {
			return "", fmt.Errorf("resourceFieldRef %q %w", sel.Resource, ErrUnsupported)
		}
		list, isLimit = c.Resources.Limits, true
	}
	rn := v1.ResourceName(name)
	if rn != v1.ResourceCPU && rn != v1.ResourceMemory && rn != v1.ResourceEphemeralStorage &&
		!strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
		return "", fmt.Errorf("resourceFieldRef %q %w", sel.Resource, ErrUnsupported)
	}
	q, ok := list[rn]
	if !ok && isLimit {
		// No limit: the node's allocatable amount, what the container
		// may use at most.
		q, ok = allocatable[rn]
	}
	if !ok {
		return "0", nil
	}
	if rn == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// isStaticPod reports whether p came from a manifest file or URL.
func isStaticPod(p *v1.Pod) bool { return pod.IsStatic(p) }
