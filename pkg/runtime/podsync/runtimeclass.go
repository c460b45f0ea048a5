package podsync

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// RuntimeClasses looks up RuntimeClasses (node.k8s.io/v1) by name.
type RuntimeClasses interface {
	// RuntimeHandler returns the CRI handler of the named RuntimeClass, or
	// an error (a NotFound API error when it does not exist).
	RuntimeHandler(ctx context.Context, name string) (string, error)
}

// runtimeHandler is the CRI runtime handler the pod's sandbox runs with:
// its RuntimeClass's, or the node's default when it names none. A pod
// whose RuntimeClass cannot be resolved is not run with the default one:
// its sandbox creation fails and it stays pending, as upstream.
func (s *Syncer) runtimeHandler(ctx context.Context, pod *v1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return s.opts.RuntimeHandler, nil
	}
	if s.opts.RuntimeClasses == nil {
		return "", fmt.Errorf("runtimeClassName %q cannot be resolved: nodelet runs without an API server (standalone), where RuntimeClasses live", *name)
	}
	h, err := s.opts.RuntimeClasses.RuntimeHandler(ctx, *name)
	if err != nil {
		return "", err
	}
	return h, nil
}
