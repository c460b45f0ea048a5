// Package metrics holds nodelet's Prometheus metrics. Metric names are the
// upstream kubelet's where it has one (kubelet_running_pods,
// kubelet_pod_worker_duration_seconds, ...), so existing dashboards and
// alerts keep working; metrics of our own start with nodelet_.
//
// Other packages report through the small Observe* functions and the
// RuntimeOperations type; Register puts everything on a registry. The
// collectors are package-level so that a one-line call site needs no
// plumbing, and registering them is explicit so tests and binaries choose
// the registry.
package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/pod"
)

// Label names.
const (
	labelOperation = "operation_type"
	labelState     = "container_state"
)

var (
	podStartDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "kubelet_pod_start_duration_seconds",
		Help: "Duration in seconds from nodelet seeing a pod for the first time to the pod starting to run.",
		// Upstream's buckets: pod starts range from sub-second to image
		// pulls of many minutes.
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
	})
	podWorkerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_pod_worker_duration_seconds",
		Help:    "Duration in seconds to sync a single pod, by operation type: create, update, sync or kill.",
		Buckets: prometheus.DefBuckets,
	}, []string{labelOperation})
	runtimeOperationsDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_runtime_operations_duration_seconds",
		Help:    "Duration in seconds of runtime operations, by operation type.",
		Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
	}, []string{labelOperation})
	runtimeOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_runtime_operations_total",
		Help: "Cumulative number of runtime operations, by operation type.",
	}, []string{labelOperation})
	runtimeOperationsErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_runtime_operations_errors_total",
		Help: "Cumulative number of runtime operation errors, by operation type.",
	}, []string{labelOperation})

	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nodelet_http_requests_total",
		Help: "Requests to the node API, by method, first path segment and status code (401 and 403 included).",
	}, []string{"method", "path", "code"})
	logRotations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nodelet_container_log_rotations_total",
		Help: "Container log rotation attempts, by result (rotated, failed).",
	}, []string{"result"})
)

// collectors are registered by Register.
var collectors = []prometheus.Collector{
	podStartDuration, podWorkerDuration,
	runtimeOperationsDuration, runtimeOperations, runtimeOperationsErrors,
	httpRequests, logRotations,
}

// Register adds nodelet's metrics to reg, with extra collectors (such as
// NewRuntimeCollector's).
func Register(reg prometheus.Registerer, extra ...prometheus.Collector) error {
	return RegisterAll(reg, append(append([]prometheus.Collector(nil), collectors...), extra...)...)
}

// RegisterAll registers every one of cs on reg and reports all that failed
// at once; a nil reg (metrics not wanted, as in most tests) registers
// nothing.
func RegisterAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	var errs []error
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ObservePodWorker records one pod sync that began at start; op is the
// worker's update type ("create", "update", "sync", "kill"). Meant for a
// defer at the top of the sync function.
func ObservePodWorker(op string, start time.Time) {
	podWorkerDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

// ObservePodStatus records the pod's start duration when its phase turns
// Running: from the first-seen annotation nodelet stamps on every pod to
// now. prev is the status before this one (nil: none yet).
func ObservePodStatus(p *v1.Pod, prev *v1.PodStatus, cur v1.PodStatus) {
	if cur.Phase != v1.PodRunning || (prev != nil && prev.Phase == v1.PodRunning) {
		return
	}
	seen, err := time.Parse(time.RFC3339Nano, p.Annotations[pod.ConfigFirstSeenAnnotationKey])
	if err != nil {
		return
	}
	podStartDuration.Observe(time.Since(seen).Seconds())
}

// RuntimeOperations records runtime operations done for pods. It is
// podsync.Options.Metrics.
type RuntimeOperations struct{}

// ObserveOperation records one operation, its duration and whether it
// failed.
func (RuntimeOperations) ObserveOperation(op string, d time.Duration, err error) {
	runtimeOperations.WithLabelValues(op).Inc()
	runtimeOperationsDuration.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		runtimeOperationsErrors.WithLabelValues(op).Inc()
	}
}

// ObserveImagePull records one successful image pull (podsync.ImagePullMetrics).
func (RuntimeOperations) ObserveImagePull(d time.Duration, size uint64) {
	ObserveImagePull(d, size)
}

// ObserveHTTPRequest counts one node API request.
func ObserveHTTPRequest(method, path, code string) {
	httpRequests.WithLabelValues(method, path, code).Inc()
}

// ObserveLogRotation counts one log rotation attempt (logs.RotatorConfig.Observe).
func ObserveLogRotation(result string) {
	logRotations.WithLabelValues(result).Inc()
}
