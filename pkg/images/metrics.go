package images

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	nodeletmetrics "github.com/nodelet/nodelet/pkg/metrics"
)

// metrics of image garbage collection.
type metrics struct {
	bytesFreed    prometheus.Counter
	imagesRemoved prometheus.Counter
	duration      prometheus.Histogram
	failures      *prometheus.CounterVec
	fsUsed        prometheus.Gauge
	fsCapacity    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bytesFreed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodelet_image_gc_bytes_freed_total",
			Help: "Bytes of images removed by image garbage collection, as sized by the runtime.",
		}),
		imagesRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodelet_image_gc_images_removed_total",
			Help: "Images removed by image garbage collection.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nodelet_image_gc_duration_seconds",
			Help:    "Duration of image garbage collection passes.",
			Buckets: []float64{.005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 120},
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodelet_image_gc_failures_total",
			Help: "Image garbage collection passes that failed, by reason: error (runtime or filesystem error), low_threshold_not_reached (not enough eligible images).",
		}, []string{"reason"}),
		fsUsed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodelet_image_fs_used_bytes",
			Help: "Used bytes of the image filesystem (capacity - available) at the last measurement.",
		}),
		fsCapacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodelet_image_fs_capacity_bytes",
			Help: "Capacity of the image filesystem at the last measurement.",
		}),
	}
	if err := nodeletmetrics.RegisterAll(reg, m.bytesFreed, m.imagesRemoved, m.duration, m.failures, m.fsUsed, m.fsCapacity); err != nil {
		return nil, fmt.Errorf("registering image GC metrics: %w", err)
	}
	return m, nil
}

const (
	failureError       = "error"
	failureLowNotReach = "low_threshold_not_reached"
)
