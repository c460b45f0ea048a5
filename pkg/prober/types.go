// Package prober runs the liveness, readiness and startup probes of the
// node's containers and keeps what they found. One goroutine probes one
// container instance with one kind of probe; the Manager owns them all and
// starts and stops them as the pod's containers come and go (Observe). What
// the probes found is read as a pure data View per pod, which status
// generation (ready, started, the pod's conditions) and the plan (restart
// after a failed liveness or startup probe) consume through their own small
// interfaces. The decisions - thresholds, initial delay, startup gating,
// which workers a pod needs - are pure functions in state.go.
package prober

import (
	v1 "k8s.io/api/core/v1"
)

// Kind is a kind of probe. Its String is upstream's, used in events
// ("Liveness probe failed: ...") and in the probe_type metric label.
type Kind int

const (
	Liveness Kind = iota
	Readiness
	Startup
)

func (k Kind) String() string {
	return [...]string{"Liveness", "Readiness", "Startup"}[k]
}

// spec returns the container's probe of kind k, or nil.
func (k Kind) spec(c *v1.Container) *v1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	default:
		return c.StartupProbe
	}
}

// Result is the outcome of one probe.
type Result int

const (
	// Unknown: the probe could not be run (the result is thrown away).
	Unknown Result = iota
	Success
	Failure
)

// Container is what the probes found of one running container instance.
type Container struct {
	// ID is the runtime's container ID of the instance probed.
	ID string
	// Started: the startup probe succeeded, or there is none.
	Started bool
	// Ready: started, and the readiness probe succeeded (its success
	// threshold reached) or there is none.
	Ready bool
	// Failed is the probe (Liveness or Startup) whose failure threshold the
	// instance reached: it must be restarted. Nil while healthy.
	Failed *Kind
}

// View is what the probes found of one pod's probed containers, by
// container name. Containers without any probe, and instances the prober
// has not seen (yet), are not in it: they count as started and ready when
// running. A View is a copy: it never changes under its reader.
type View map[string]Container

// instance returns the entry for the named container if it is about
// instance id.
func (v View) instance(name, id string) (Container, bool) {
	c, ok := v[name]
	return c, ok && c.ID == id
}

// Started reports whether instance id of the named container has started:
// its startup probe succeeded or it has none.
func (v View) Started(name, id string) bool {
	c, ok := v.instance(name, id)
	return !ok || c.Started
}

// Ready reports whether instance id of the named running container is
// ready as far as its probes go.
func (v View) Ready(name, id string) bool {
	c, ok := v.instance(name, id)
	return !ok || c.Ready
}

// Unhealthy returns the kind of probe ("liveness" or "startup", as in
// upstream's kill message) that found instance id of the named container
// failed, or "" when it is healthy.
func (v View) Unhealthy(name, id string) string {
	c, ok := v.instance(name, id)
	if !ok || c.Failed == nil {
		return ""
	}
	if *c.Failed == Startup {
		return "startup"
	}
	return "liveness"
}
