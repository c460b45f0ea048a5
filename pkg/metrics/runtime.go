package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// listTimeout bounds the runtime list behind one scrape.
const listTimeout = 5 * time.Second

var (
	runningPodsDesc = prometheus.NewDesc("kubelet_running_pods",
		"Number of pods that have a running pod sandbox.", nil, nil)
	runningContainersDesc = prometheus.NewDesc("kubelet_running_containers",
		"Number of containers currently in the runtime, by state (created, running, exited, unknown).", []string{labelState}, nil)
)

// RuntimeCollector reports kubelet_running_pods and
// kubelet_running_containers from a runtime listing made at scrape time, so
// the numbers are never older than the scrape.
type RuntimeCollector struct {
	list func(ctx context.Context) ([]*runtime.Pod, error)
}

// NewRuntimeCollector returns a collector over list (what runs, by pod: cristatus.Pods of cri.Client.ListState).
func NewRuntimeCollector(list func(ctx context.Context) ([]*runtime.Pod, error)) *RuntimeCollector {
	return &RuntimeCollector{list: list}
}

// Describe implements prometheus.Collector.
func (c *RuntimeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

// Collect implements prometheus.Collector. When the runtime does not answer
// it reports nothing rather than zeros, which would read as "all pods gone".
func (c *RuntimeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	pods, err := c.list(ctx)
	if err != nil {
		klog.V(2).InfoS("Runtime metrics: listing pods failed", "err", err)
		return
	}
	running := 0
	states := map[runtime.ContainerState]int{
		runtime.ContainerStateCreated: 0, runtime.ContainerStateRunning: 0,
		runtime.ContainerStateExited: 0, runtime.ContainerStateUnknown: 0,
	}
	for _, p := range pods {
		for _, sb := range p.Sandboxes {
			if sb.State == runtime.SandboxStateReady {
				running++
				break
			}
		}
		for _, ctr := range p.Containers {
			states[ctr.State]++
		}
	}
	ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(running))
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(n), string(st))
	}
}
