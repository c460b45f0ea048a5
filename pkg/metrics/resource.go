package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// summaryTimeout bounds the summary behind one /metrics/resource scrape.
const summaryTimeout = 10 * time.Second

// SummaryFunc returns the stats summary (stats.Provider.Summary).
type SummaryFunc func(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)

var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	ctrCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	ctrMemDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	ctrStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	scrapeErrDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// ResourceMetricsHandler serves /metrics/resource, the upstream kubelet's
// endpoint for metrics-server: node, pod and container CPU and memory,
// each sample stamped with the time it was measured (metrics-server
// computes rates from those times).
func ResourceMetricsHandler(summary SummaryFunc) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(resourceCollector{summary: summary})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

type resourceCollector struct {
	summary SummaryFunc
}

func (resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemDesc, podCPUDesc, podMemDesc, ctrCPUDesc, ctrMemDesc, ctrStartDesc, scrapeErrDesc} {
		ch <- d
	}
}

func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), summaryTimeout)
	defer cancel()
	s, err := c.summary(ctx, true)
	if err != nil {
		klog.V(2).InfoS("Resource metrics: summary failed", "err", err)
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 0)
	emitCPU(ch, nodeCPUDesc, s.Node.CPU)
	emitMem(ch, nodeMemDesc, s.Node.Memory)
	for _, p := range s.Pods {
		emitCPU(ch, podCPUDesc, p.CPU, p.PodRef.Name, p.PodRef.Namespace)
		emitMem(ch, podMemDesc, p.Memory, p.PodRef.Name, p.PodRef.Namespace)
		for _, ctr := range p.Containers {
			labels := []string{ctr.Name, p.PodRef.Name, p.PodRef.Namespace}
			emitCPU(ch, ctrCPUDesc, ctr.CPU, labels...)
			emitMem(ch, ctrMemDesc, ctr.Memory, labels...)
			if !ctr.StartTime.IsZero() {
				ch <- prometheus.NewMetricWithTimestamp(ctr.StartTime.Time,
					prometheus.MustNewConstMetric(ctrStartDesc, prometheus.GaugeValue, float64(ctr.StartTime.UnixNano())/1e9, labels...))
			}
		}
	}
}

func emitCPU(ch chan<- prometheus.Metric, d *prometheus.Desc, c *statsapi.CPUStats, labels ...string) {
	if c == nil || c.UsageCoreNanoSeconds == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(c.Time.Time,
		prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*c.UsageCoreNanoSeconds)/1e9, labels...))
}

func emitMem(ch chan<- prometheus.Metric, d *prometheus.Desc, m *statsapi.MemoryStats, labels ...string) {
	if m == nil || m.WorkingSetBytes == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(m.Time.Time,
		prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*m.WorkingSetBytes), labels...))
}
