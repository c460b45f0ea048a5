package server

import (
	"context"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func notImplemented(what string) error {
	return fmt.Errorf("%s: %w", what, ErrNotImplemented)
}

// podFromPath finds the pod named by the request's {namespace}, {pod} and
// optional {uid} path values. The UID may be the pod's own or, for a static
// pod, its mirror pod's: the API server only knows the latter.
func (d APIDeps) podFromPath(r *http.Request) (*v1.Pod, error) {
	ns := r.PathValue("namespace")
	if ns == "" {
		// The legacy /stats/{pod}/{container} path means the default namespace.
		ns = v1.NamespaceDefault
	}
	return d.findPod(ns, r.PathValue("pod"), types.UID(r.PathValue("uid")))
}

func (d APIDeps) findPod(namespace, name string, uid types.UID) (*v1.Pod, error) {
	if d.FindPod == nil {
		return nil, notImplemented("pod lookup")
	}
	p, ok := d.FindPod(namespace, name)
	if !ok {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, ErrNotFound)
	}
	if uid == "" {
		return p, nil
	}
	if d.ResolveUID != nil {
		uid = d.ResolveUID(uid)
	}
	if uid != p.UID {
		return nil, fmt.Errorf("pod %s/%s with UID %s: %w", namespace, name, uid, ErrNotFound)
	}
	return p, nil
}

// specHasContainer reports whether the pod spec names the container, among
// init, regular and ephemeral containers.
func specHasContainer(p *v1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// findContainer returns the instance of the pod's container whose logs or
// stats a caller means, as upstream reads it from the container's status:
// the current one is the newest instance; the previous one is the last
// terminated instance, which is the newest itself while a dead container
// waits to be restarted (crash-loop back-off), and the one before it
// otherwise. A name the spec does not have is ErrNotFound; a container with
// no such instance is ErrBadRequest, as upstream answers kubectl then.
func (d APIDeps) findContainer(ctx context.Context, p *v1.Pod, name string, previous bool) (*runtime.ContainerStatus, error) {
	if !specHasContainer(p, name) {
		return nil, fmt.Errorf("container %q in pod %s/%s: %w", name, p.Namespace, p.Name, ErrNotFound)
	}
	if d.RuntimeStatus == nil {
		return nil, notImplemented("runtime status")
	}
	st, err := d.RuntimeStatus(ctx, p.UID, p.Name, p.Namespace)
	if err != nil {
		return nil, fmt.Errorf("runtime status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	var instances []*runtime.ContainerStatus // newest first
	for _, c := range st.Containers {
		if c.Name == name {
			instances = append(instances, c)
		}
	}
	switch {
	case len(instances) == 0:
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: %w", name, p.Name, ErrBadRequest)
	case !previous:
		return instances[0], nil
	case willRestart(p, instances[0]):
		return instances[0], nil
	case len(instances) > 1:
		return instances[1], nil
	default:
		return nil, fmt.Errorf("previous terminated container %q in pod %q not found: %w", name, p.Name, ErrBadRequest)
	}
}

// willRestart reports whether c is dead and its restart policy brings it
// back (an ephemeral container's never does), so that its status shows it as the last termination of a waiting
// container rather than as the current state.
func willRestart(p *v1.Pod, c *runtime.ContainerStatus) bool {
	if c.State != runtime.ContainerStateExited && c.State != runtime.ContainerStateUnknown {
		return false
	}
	for _, ec := range p.Spec.EphemeralContainers {
		if ec.Name == c.Name {
			return false // never restarted
		}
	}
	switch p.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return c.ExitCode != 0
	default: // Always, and the empty default
		return true
	}
}

// runningContainer is findContainer for exec and attach, which need the
// container to run.
func (d APIDeps) runningContainer(ctx context.Context, r *http.Request) (*runtime.ContainerStatus, error) {
	p, err := d.podFromPath(r)
	if err != nil {
		return nil, err
	}
	return d.runningContainerOf(ctx, p, r.PathValue("container"))
}

// runningContainerOf is runningContainer for a pod already looked up.
func (d APIDeps) runningContainerOf(ctx context.Context, p *v1.Pod, name string) (*runtime.ContainerStatus, error) {
	c, err := d.findContainer(ctx, p, name, false)
	if err != nil {
		return nil, err
	}
	if c.State != runtime.ContainerStateRunning {
		return nil, fmt.Errorf("container %q in pod %q is not running (%s): %w", name, p.Name, c.State, ErrBadRequest)
	}
	return c, nil
}
