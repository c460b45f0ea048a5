package gc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	nodeletmetrics "github.com/nodelet/nodelet/pkg/metrics"
)

type metrics struct {
	containersRemoved prometheus.Counter
	sandboxesRemoved  prometheus.Counter
	logDirsRemoved    prometheus.Counter
	duration          prometheus.Histogram
	failures          prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		containersRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodelet_container_gc_containers_removed_total",
			Help: "Dead containers removed by container garbage collection.",
		}),
		sandboxesRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodelet_container_gc_sandboxes_removed_total",
			Help: "Pod sandboxes removed by container garbage collection.",
		}),
		logDirsRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodelet_container_gc_pod_log_dirs_removed_total",
			Help: "Pod log directories of removed pods deleted by container garbage collection.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nodelet_container_gc_duration_seconds",
			Help:    "Duration of container garbage collection passes.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30},
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodelet_container_gc_failures_total",
			Help: "Container garbage collection passes that returned an error.",
		}),
	}
	if err := nodeletmetrics.RegisterAll(reg, m.containersRemoved, m.sandboxesRemoved, m.logDirsRemoved, m.duration, m.failures); err != nil {
		return nil, fmt.Errorf("registering container GC metrics: %w", err)
	}
	return m, nil
}
