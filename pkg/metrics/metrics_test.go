package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/podsync"
)

var _ podsync.Metrics = RuntimeOperations{}

func TestRegisterAndObserve(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	pods := []*runtime.Pod{
		{Sandboxes: []runtime.SandboxRef{{State: runtime.SandboxStateReady}, {State: runtime.SandboxStateNotReady}},
			Containers: []runtime.ContainerRef{{State: runtime.ContainerStateRunning}, {State: runtime.ContainerStateExited}}},
		{Sandboxes: []runtime.SandboxRef{{State: runtime.SandboxStateNotReady}},
			Containers: []runtime.ContainerRef{{State: runtime.ContainerStateExited}}},
	}
	if err := Register(reg, NewRuntimeCollector(func(context.Context) ([]*runtime.Pod, error) { return pods, nil })); err != nil {
		t.Fatal(err)
	}
	if err := Register(prometheus.NewRegistry()); err != nil {
		t.Errorf("registering on a second registry: %v", err)
	}

	ObservePodWorker("create", time.Now().Add(-time.Second))
	RuntimeOperations{}.ObserveOperation(podsync.OpStartContainer, 20*time.Millisecond, nil)
	RuntimeOperations{}.ObserveOperation(podsync.OpStartContainer, 20*time.Millisecond, errors.New("boom"))
	ObserveHTTPRequest("GET", "pods", "401")
	ObserveLogRotation("rotated")

	seen := time.Now().Add(-3 * time.Second).Format(time.RFC3339Nano)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pod.ConfigFirstSeenAnnotationKey: seen}}}
	running := v1.PodStatus{Phase: v1.PodRunning}
	ObservePodStatus(p, &v1.PodStatus{Phase: v1.PodPending}, running) // counted
	ObservePodStatus(p, &running, running)                            // already running: not again
	ObservePodStatus(p, nil, v1.PodStatus{Phase: v1.PodPending})      // not running yet
	ObservePodStatus(&v1.Pod{}, nil, running)                         // no first-seen time

	text := scrape(t, reg)
	for _, want := range []string{
		"kubelet_running_pods 1",
		`kubelet_running_containers{container_state="running"} 1`,
		`kubelet_running_containers{container_state="exited"} 2`,
		`kubelet_running_containers{container_state="created"} 0`,
		`kubelet_pod_worker_duration_seconds_count{operation_type="create"} 1`,
		"kubelet_pod_start_duration_seconds_count 1",
		`kubelet_runtime_operations_total{operation_type="start_container"} 2`,
		`kubelet_runtime_operations_errors_total{operation_type="start_container"} 1`,
		`kubelet_runtime_operations_duration_seconds_count{operation_type="start_container"} 2`,
		`nodelet_http_requests_total{code="401",method="GET",path="pods"} 1`,
		`nodelet_container_log_rotations_total{result="rotated"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestRuntimeCollectorRuntimeDown(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewRuntimeCollector(func(context.Context) ([]*runtime.Pod, error) { return nil, errors.New("down") }))
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Errorf("runtime down: %d metric families, %v; want none rather than zeros", len(mfs), err)
	}
}

func TestResourceMetrics(t *testing.T) {
	ts := metav1.NewTime(time.Unix(1796200000, 0))
	u := func(v uint64) *uint64 { return &v }
	summary := &statsapi.Summary{
		Node: statsapi.NodeStats{
			CPU:    &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u(2e9)},
			Memory: &statsapi.MemoryStats{Time: ts, WorkingSetBytes: u(1024)},
		},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "web", Namespace: "default"},
			CPU:    &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u(5e8)},
			Memory: &statsapi.MemoryStats{Time: ts, WorkingSetBytes: u(512)},
			Containers: []statsapi.ContainerStats{{
				Name: "app", StartTime: ts,
				CPU:    &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u(5e8)},
				Memory: &statsapi.MemoryStats{Time: ts},
			}},
		}},
	}
	var only bool
	h := ResourceMetricsHandler(func(_ context.Context, o bool) (*statsapi.Summary, error) { only = o; return summary, nil })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/resource", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"node_cpu_usage_seconds_total 2 1796200000000",
		"node_memory_working_set_bytes 1024 1796200000000",
		`pod_cpu_usage_seconds_total{namespace="default",pod="web"} 0.5 1796200000000`,
		`pod_memory_working_set_bytes{namespace="default",pod="web"} 512 1796200000000`,
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 0.5 1796200000000`,
		`container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7962e+09 1796200000000`,
		"resource_scrape_error 0",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("lacks %q in:\n%s", want, body)
		}
	}
	if strings.Contains(body, "container_memory_working_set_bytes") {
		t.Error("container memory without a working set reported")
	}
	if !only {
		t.Error("resource metrics asked for the full summary")
	}

	h = ResourceMetricsHandler(func(context.Context, bool) (*statsapi.Summary, error) { return nil, errors.New("runtime down") })
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/resource", nil))
	if !strings.Contains(rec.Body.String(), "resource_scrape_error 1") {
		t.Errorf("failure: %s", rec.Body)
	}
}

func scrape(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	srv := httptest.NewServer(promhttpHandler(g))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
