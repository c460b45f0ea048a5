package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probe result label values, as upstream's prober_probe_total.
const (
	ProbeResultSuccessful = "successful"
	ProbeResultFailed     = "failed"
	ProbeResultUnknown    = "unknown"
)

// Probe metrics have upstream's names and labels; they are served apart
// from the others on /metrics/probes, as upstream does.
var (
	probeTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "prober_probe_total",
		Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	probeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "prober_probe_duration_seconds",
		Help:    "Duration in seconds for a probe response.",
		Buckets: prometheus.DefBuckets,
	}, []string{"probe_type", "container", "pod", "namespace"})
	probeRegistry = func() *prometheus.Registry {
		r := prometheus.NewRegistry()
		r.MustRegister(probeTotal, probeDuration)
		return r
	}()
)

// ProbeLabels identify one container's probe of one kind ("Liveness",
// "Readiness", "Startup").
type ProbeLabels struct {
	ProbeType, Container, Pod, Namespace, PodUID string
}

// ProbeSeries are the series of one probe, each resolved on its first use
// (as upstream, a result never seen has no series): a probe every second
// to every container must not hash its labels on every run. Not safe for
// concurrent use: one probe worker owns it.
type ProbeSeries struct {
	labels   ProbeLabels
	total    map[string]prometheus.Counter
	duration prometheus.Observer
}

// NewProbeSeries returns the series of the probe l.
func NewProbeSeries(l ProbeLabels) *ProbeSeries {
	return &ProbeSeries{labels: l, total: make(map[string]prometheus.Counter, 1)}
}

// Observe counts one probe and its result. As upstream, the duration of a
// failed probe is not observed (a timeout would swamp the histogram).
func (s *ProbeSeries) Observe(result string, d time.Duration) {
	l := s.labels
	c, ok := s.total[result]
	if !ok {
		c = probeTotal.WithLabelValues(l.ProbeType, result, l.Container, l.Pod, l.Namespace, l.PodUID)
		s.total[result] = c
	}
	c.Inc()
	if result == ProbeResultFailed {
		return
	}
	if s.duration == nil {
		s.duration = probeDuration.WithLabelValues(l.ProbeType, l.Container, l.Pod, l.Namespace)
	}
	s.duration.Observe(d.Seconds())
}

// ForgetProbe drops the series of a probe whose pod left the node.
func ForgetProbe(l ProbeLabels) {
	for _, r := range []string{ProbeResultSuccessful, ProbeResultFailed, ProbeResultUnknown} {
		probeTotal.DeleteLabelValues(l.ProbeType, r, l.Container, l.Pod, l.Namespace, l.PodUID)
	}
	probeDuration.DeleteLabelValues(l.ProbeType, l.Container, l.Pod, l.Namespace)
}

// ProbeMetricsHandler serves /metrics/probes.
func ProbeMetricsHandler() http.Handler {
	return promhttp.HandlerFor(probeRegistry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
