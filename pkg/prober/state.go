package prober

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// settings are a probe's timing and thresholds with the API's defaults
// for what a manifest left unset (zero): manifests from files are not
// defaulted by an API server.
type settings struct {
	initialDelay, period, timeout time.Duration
	success, failure              int
}

func settingsOf(p *v1.Probe) settings {
	s := settings{
		initialDelay: time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second,
		period:       time.Duration(p.PeriodSeconds) * time.Second,
		timeout:      time.Duration(p.TimeoutSeconds) * time.Second,
		success:      int(p.SuccessThreshold),
		failure:      int(p.FailureThreshold),
	}
	if s.period <= 0 {
		s.period = 10 * time.Second
	}
	if s.timeout <= 0 {
		s.timeout = time.Second
	}
	if s.success <= 0 {
		s.success = 1
	}
	if s.failure <= 0 {
		s.failure = 3
	}
	return s
}

// streak counts identical probe results in a row.
type streak struct {
	last  Result
	count int
}

// step folds one probe result into s. commit reports whether the result
// now stands: it came threshold times in a row (success threshold for a
// success, failure threshold for a failure). An Unknown result (the probe
// could not run) changes nothing.
func step(s streak, r Result, cfg settings) (next streak, commit bool) {
	if r == Unknown {
		return s, false
	}
	if s.last == r {
		s.count++
	} else {
		s = streak{last: r, count: 1}
	}
	threshold := cfg.success
	if r == Failure {
		threshold = cfg.failure
	}
	return s, s.count >= threshold
}

// firstDelay is how long a worker waits before its first probe: what is
// left of the initial delay, counted from when the container started.
func firstDelay(startedAt, now time.Time, initialDelay time.Duration) time.Duration {
	return max(startedAt.Add(initialDelay).Sub(now), 0)
}

// initial is the state of a container instance before any probe ran, and
// the probes to run first: a startup probe holds back the others.
func initial(c *v1.Container, id string) (Container, []Kind) {
	st := Container{ID: id}
	if c.StartupProbe != nil {
		return st, []Kind{Startup}
	}
	st.Started = true
	st.Ready = c.ReadinessProbe == nil
	return st, afterStartup(c)
}

// resumed is initial for a container instance that already ran when this
// nodelet started (adopted from an earlier nodelet or an upstream kubelet)
// and that the API last reported as reported: the startup and readiness
// results that agent established stand until this nodelet's own probes say
// otherwise, so taking a node over does not flip a pod's readiness. Only the
// same instance (container ID) is resumed; ok is false when reported does
// not show it, or shows it neither started nor ready.
func resumed(c *v1.Container, id string, reported []v1.ContainerStatus) (st Container, kinds []Kind, ok bool) {
	for _, r := range reported {
		if r.Name != c.Name || !sameContainerID(r.ContainerID, id) || r.State.Running == nil {
			continue
		}
		started := c.StartupProbe == nil || (r.Started != nil && *r.Started)
		if !started && !r.Ready {
			return Container{}, nil, false
		}
		st = Container{ID: id, Started: started, Ready: started && r.Ready}
		if !started {
			return st, []Kind{Startup}, true
		}
		return st, afterStartup(c), true
	}
	return Container{}, nil, false
}

// sameContainerID: the API's "<runtime>://<id>" names the runtime's id.
func sameContainerID(api, id string) bool {
	if id == "" {
		return false
	}
	if _, bare, ok := strings.Cut(api, "://"); ok {
		api = bare
	}
	return api == id
}

// afterStartup lists the probes that run once the container started.
func afterStartup(c *v1.Container) []Kind {
	var ks []Kind
	if c.ReadinessProbe != nil {
		ks = append(ks, Readiness)
	}
	if c.LivenessProbe != nil {
		ks = append(ks, Liveness)
	}
	return ks
}

// apply records a result that stands (see step) for probe kind k of
// container c in st. It returns the new state, the probes to start now,
// and whether the probe of kind k keeps running: a startup probe has
// answered its question either way, and a failed liveness probe's
// container is about to be killed (its replacement gets new probes).
func apply(st Container, c *v1.Container, k Kind, r Result) (next Container, start []Kind, keep bool) {
	switch k {
	case Startup:
		if r == Success {
			st.Started = true
			st.Ready = c.ReadinessProbe == nil
			return st, afterStartup(c), false
		}
		failed := Startup
		st.Failed = &failed
		return st, nil, false
	case Readiness:
		st.Ready = st.Started && r == Success
		return st, nil, true
	default:
		if r == Failure {
			failed := Liveness
			st.Failed = &failed
			return st, nil, false
		}
		return st, nil, true
	}
}

// sameState reports whether two states read the same to a View's user.
func sameState(a, b Container) bool {
	return a.ID == b.ID && a.Started == b.Started && a.Ready == b.Ready && (a.Failed == nil) == (b.Failed == nil) &&
		(a.Failed == nil || *a.Failed == *b.Failed)
}

// target is a container instance to probe.
type target struct {
	spec      *v1.Container
	id        string
	startedAt time.Time
}

// targets returns, for every container of pod that has a probe, its
// running instance in rs; containers with probes but no running instance
// map to a zero target (nothing to probe: their probes stop).
func targets(pod *v1.Pod, rs *runtime.PodStatus) map[string]target {
	out := map[string]target{}
	add := func(cs []v1.Container) {
		for i := range cs {
			c := &cs[i]
			if c.LivenessProbe == nil && c.ReadinessProbe == nil && c.StartupProbe == nil {
				continue
			}
			t := target{}
			if rc := rs.LatestContainer(c.Name); rc != nil && rc.State == runtime.ContainerStateRunning {
				t = target{spec: c, id: rc.ID, startedAt: rc.StartedAt}
			}
			out[c.Name] = t
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

// stopsWhenTerminating: a pod being deleted keeps its readiness probe (a
// container that stops serving while it shuts down turns not ready), but
// is no longer restarted for a failed liveness or startup probe.
func stopsWhenTerminating(k Kind) bool { return k != Readiness }
