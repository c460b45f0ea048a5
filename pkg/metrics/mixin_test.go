package metrics

import (
	"bufio"
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promcollectors "github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/stats"
)

// mixinSeries is one line of testdata/mixin-series.txt.
type mixinSeries struct {
	endpoint, name, typ string
	labels              []string
	status              string
}

func readMixinSeries(t *testing.T) []mixinSeries {
	t.Helper()
	f, err := os.Open("testdata/mixin-series.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mixinSeries
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Fatalf("bad line %q", line)
		}
		s := mixinSeries{endpoint: f[0], name: f[1], typ: f[2], status: f[4]}
		if f[3] != "-" {
			s.labels = strings.Split(f[3], ",")
		}
		out = append(out, s)
	}
	return out
}

// TestMixinSeries checks that every series the kubernetes-mixin's kubelet
// rules, alerts and dashboards query, and nodelet serves, exists with
// upstream's type and the labels queried: /metrics from a registry built as
// the nodelet binary builds it, with each observer called once, and
// /metrics/cadvisor from a scrape of a fake node.
func TestMixinSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	pods := []*runtime.Pod{{Sandboxes: []runtime.SandboxRef{{State: runtime.SandboxStateReady}}}}
	if err := Register(reg,
		NewRuntimeCollector(func(context.Context) ([]*runtime.Pod, error) { return pods, nil }),
		NodeNameCollector("node-a"),
		promcollectors.NewGoCollector(),
		promcollectors.NewProcessCollector(promcollectors.ProcessCollectorOpts{}),
	); err != nil {
		t.Fatal(err)
	}
	// Every observer once, as the running agent calls them.
	ObservePodWorker("sync", time.Now())
	podStartDuration.Observe(1) // ObservePodStatus needs a pod turning Running
	RuntimeOperations{}.ObserveOperation("start_container", time.Millisecond, context.Canceled)
	RuntimeOperations{}.ObserveImagePull(time.Second, 5<<20)
	PLEG{}.ObserveRelist(time.Now(), time.Millisecond, time.Second, true)
	StartHTTPRequest("GET", "pods", "readwrite", false).Done()
	ObserveCertificateRenewError("client")
	ObserveCertificateRenewError("serving")
	ObserveCgroupOperation("create", time.Now())
	restLatency{}.Observe(context.Background(), "GET", url.URL{Host: "api:6443"}, time.Millisecond)
	restResult{}.Increment(context.Background(), "200", "GET", "api:6443")

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	kubelet := byName(fams)

	d := fakeDetail(1, 1)
	for _, cd := range d.Containers {
		cd.Cgroup.CPUQuota = 50000
		cd.Cgroup.HasCFS = true
	}
	g := NewCadvisorGatherer(func(context.Context) (*stats.Detail, error) { return d, nil }, time.Now)
	cfams, done, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	cadvisor := byName(cfams)

	served, missing := 0, 0
	for _, s := range readMixinSeries(t) {
		src, ok := map[string]map[string]*dto.MetricFamily{"metrics": kubelet, "cadvisor": cadvisor}[s.endpoint]
		if !ok {
			t.Fatalf("%s: endpoint %q", s.name, s.endpoint)
		}
		if s.status != "served" {
			if !strings.HasPrefix(s.status, "missing:") {
				t.Errorf("%s: status %q", s.name, s.status)
			}
			if _, ok := src[s.name]; ok {
				t.Errorf("%s is marked missing but is served: update the test data and the docs", s.name)
			}
			missing++
			continue
		}
		served++
		f, ok := src[s.name]
		if !ok {
			t.Errorf("/%s lacks %s", s.endpoint, s.name)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != s.typ {
			t.Errorf("%s is a %s, upstream's is a %s", s.name, got, s.typ)
		}
		have := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				have[l.GetName()] = true
			}
		}
		for _, l := range s.labels {
			if !have[l] {
				t.Errorf("%s has no label %q (has %v)", s.name, l, have)
			}
		}
	}
	t.Logf("%d mixin series served, %d missing", served, missing)

	// nodelet's own series keep the nodelet_ prefix: nothing else outside
	// upstream's namespaces.
	for name := range kubelet {
		ok := false
		for _, p := range []string{"kubelet_", "nodelet_", "rest_client_", "process_", "go_"} {
			ok = ok || strings.HasPrefix(name, p)
		}
		if !ok {
			t.Errorf("series %s is neither upstream's nor nodelet_", name)
		}
	}
}

func byName(fams []*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}
