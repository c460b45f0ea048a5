package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The rest of upstream's kubelet metric set that nodelet has data for:
// names, types, labels and buckets as k8s.io/kubernetes v1.37
// pkg/kubelet/metrics, pkg/kubelet/server/metrics and client-go's
// rest_client adapter define them, so that the kubernetes-mixin's kubelet
// dashboard and alerts read them.
var (
	plegRelistDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pleg_relist_duration_seconds",
		Help:    "Duration in seconds for relisting pods in PLEG.",
		Buckets: prometheus.DefBuckets,
	})
	plegRelistInterval = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pleg_relist_interval_seconds",
		Help:    "Interval in seconds between relisting in PLEG.",
		Buckets: prometheus.DefBuckets,
	})
	plegLastSeen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubelet_pleg_last_seen_seconds",
		Help: "Timestamp in seconds when PLEG was last seen active.",
	})

	httpLabels       = []string{"method", "path", "server_type", "long_running"}
	kubeletHTTPTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_http_requests_total",
		Help: "Number of the http requests received since the server started",
	}, httpLabels)
	kubeletHTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_http_requests_duration_seconds",
		Help:    "Duration in seconds to serve http requests",
		Buckets: prometheus.DefBuckets,
	}, httpLabels)
	kubeletHTTPInflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_http_inflight_requests",
		Help: "Number of the inflight http requests",
	}, httpLabels)

	clientCertRenewErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_certificate_manager_client_expiration_renew_errors",
		Help: "Counter of certificate renewal errors.",
	})
	serverCertRenewErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_server_expiration_renew_errors",
		Help: "Counter of certificate renewal errors.",
	})

	imagePullDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_image_pull_duration_seconds",
		Help:    "Duration in seconds to pull an image.",
		Buckets: []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
	}, []string{"image_size_in_bytes"})

	cgroupManagerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_cgroup_manager_duration_seconds",
		Help:    "Duration in seconds for cgroup manager operations. Broken down by method.",
		Buckets: prometheus.DefBuckets,
	}, []string{"operation_type"})

	restClientLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds. Broken down by verb, and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0},
	}, []string{"verb", "host"})
	restClientResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Number of HTTP requests, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
)

func init() {
	collectors = append(collectors,
		plegRelistDuration, plegRelistInterval, plegLastSeen,
		kubeletHTTPTotal, kubeletHTTPDuration, kubeletHTTPInflight,
		clientCertRenewErrors, serverCertRenewErrors, imagePullDuration, cgroupManagerDuration,
		restClientLatency, restClientResults)
	// client-go reports every API request through these hooks; they are
	// set once per process, before the first client is built.
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency: restLatency{},
		RequestResult:  restResult{},
	})
}

// NodeNameCollector reports kubelet_node_name{node=name} 1, which the
// mixin joins other kubelet series with to name their node.
func NodeNameCollector(name string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_node_name",
		Help: "The node's name. The count is always 1.",
	}, []string{"node"})
	g.WithLabelValues(name).Set(1)
	return g
}

// PLEG records relists (pleg.Metrics).
type PLEG struct{}

// ObserveRelist implements pleg.Metrics.
func (PLEG) ObserveRelist(began time.Time, d, interval time.Duration, ok bool) {
	plegRelistDuration.Observe(d.Seconds())
	if interval > 0 {
		plegRelistInterval.Observe(interval.Seconds())
	}
	if ok {
		plegLastSeen.Set(float64(began.Add(d).Unix()))
	}
}

// HTTPRequest is one node API request being served, as upstream counts
// it: counted and in flight from its start, its duration observed by Done.
type HTTPRequest struct {
	labels [4]string
	start  time.Time
}

// StartHTTPRequest counts a request on the node API (serverType
// "readwrite") or the read-only one ("readonly"); path is its bucket
// ("pods", "metrics/cadvisor", "other", ...).
func StartHTTPRequest(method, path, serverType string, longRunning bool) HTTPRequest {
	lr := "false"
	if longRunning {
		lr = "true"
	}
	r := HTTPRequest{labels: [4]string{method, path, serverType, lr}, start: time.Now()}
	kubeletHTTPTotal.WithLabelValues(r.labels[:]...).Inc()
	kubeletHTTPInflight.WithLabelValues(r.labels[:]...).Inc()
	return r
}

// Done ends the request.
func (r HTTPRequest) Done() {
	kubeletHTTPInflight.WithLabelValues(r.labels[:]...).Dec()
	kubeletHTTPDuration.WithLabelValues(r.labels[:]...).Observe(time.Since(r.start).Seconds())
}

// ObserveCertificateRenewError counts a failed renewal of the client
// ("client") or serving ("serving") certificate.
func ObserveCertificateRenewError(kind string) {
	if kind == "serving" {
		serverCertRenewErrors.Inc()
		return
	}
	clientCertRenewErrors.Inc()
}

// ObserveImagePull records one successful image pull of size bytes (0:
// unknown) that took d.
func ObserveImagePull(d time.Duration, size uint64) {
	imagePullDuration.WithLabelValues(ImageSizeBucket(size)).Observe(d.Seconds())
}

// imageSizeBuckets are upstream's image_size_in_bytes label values, by
// lower bound.
var imageSizeBuckets = []struct {
	lower uint64
	label string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

// ImageSizeBucket is the image_size_in_bytes label of an image of size
// bytes: "N/A" for an unknown (0) size.
func ImageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(imageSizeBuckets) - 1; i >= 0; i-- {
		if size > imageSizeBuckets[i].lower {
			return imageSizeBuckets[i].label
		}
	}
	return imageSizeBuckets[0].label
}

type restLatency struct{}

func (restLatency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	restClientLatency.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type restResult struct{}

func (restResult) Increment(_ context.Context, code, method, host string) {
	restClientResults.WithLabelValues(code, method, host).Inc()
}

// ObserveCgroupOperation records one pod or QoS cgroup operation (op:
// "create", "update", "destroy") that began at began.
func ObserveCgroupOperation(op string, began time.Time) {
	cgroupManagerDuration.WithLabelValues(op).Observe(time.Since(began).Seconds())
}
