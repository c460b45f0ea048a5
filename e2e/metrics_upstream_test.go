//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestMetricsMatchUpstreamKubelet runs the upstream kubelet v1.37 and then
// nodelet on the same harness with the same pod, scrapes /metrics and
// /metrics/cadvisor of both, and diffs them: every family both expose has
// the same type, the same label names and (histograms) the same buckets;
// and every series the kubernetes-mixin reads that nodelet serves
// (pkg/metrics/testdata/mixin-series.txt) has upstream's type where the
// upstream kubelet showed it in this run.
func TestMetricsMatchUpstreamKubelet(t *testing.T) {
	wantMetrics := []string{"kubelet_running_pods", "kubelet_pod_worker_duration_seconds", "kubelet_pleg_relist_duration_seconds", "kubelet_runtime_operations_total"}
	wantCadvisor := []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "machine_cpu_cores"}
	running := func(p *v1.Pod) bool { return containerRunning(p, "busy", "idle") }

	// The upstream kubelet, on a runtime of its own. Its read-only port
	// serves the metrics without authentication.
	urt := framework.StartRuntime(t)
	k := framework.NewStandaloneUpstreamKubelet(t, urt)
	k.Start()
	k.WriteManifest("cadv.yaml", cadvisorPodManifest)
	k.WaitPod(cadvisorPod, 2*time.Minute, "busy and idle running under the upstream kubelet", running)
	readOnly := func(path string) (map[string]*dto.MetricFamily, error) {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(k.ReadOnlyPort) + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %d %.200s", path, resp.StatusCode, body)
		}
		return parseExposition(string(body))
	}
	upMetrics := waitFamilies(t, "upstream /metrics", func() (map[string]*dto.MetricFamily, error) { return readOnly("/metrics") }, wantMetrics)
	upCadvisor := waitFamilies(t, "upstream /metrics/cadvisor", func() (map[string]*dto.MetricFamily, error) { return readOnly("/metrics/cadvisor") }, wantCadvisor)
	k.Stop()

	// nodelet, on another runtime, with the same pod.
	rt := framework.StartRuntime(t)
	caFile, cert := clientPKI(t, t.TempDir())
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt,
		"--port", strconv.Itoa(port), "--address", "127.0.0.1", "--client-ca-file", caFile,
		"--authentication-token-webhook=false", "--authorization-mode", "AlwaysAllow")
	n.WriteManifest("cadv.yaml", cadvisorPodManifest)
	n.WaitPod(cadvisorPod, 2*time.Minute, "busy and idle running under nodelet", running)
	c := nodeClient{base: fmt.Sprintf("https://127.0.0.1:%d", port), cert: &cert}
	get := func(path string) func() (map[string]*dto.MetricFamily, error) {
		return func() (map[string]*dto.MetricFamily, error) {
			code, body := c.do(t, "GET", path)
			if code != http.StatusOK {
				return nil, fmt.Errorf("%s: %d %.200s", path, code, body)
			}
			return parseExposition(body)
		}
	}
	ourMetrics := waitFamilies(t, "nodelet /metrics", get("/metrics"), wantMetrics)
	ourCadvisor := waitFamilies(t, "nodelet /metrics/cadvisor", get("/metrics/cadvisor"), wantCadvisor)

	diffFamilies(t, "/metrics", upMetrics, ourMetrics)
	diffFamilies(t, "/metrics/cadvisor", upCadvisor, ourCadvisor)

	// The test data's claims about upstream hold where upstream showed the
	// series in this run.
	var lacking []string
	for _, s := range mixinTestData(t) {
		up := map[string]map[string]*dto.MetricFamily{"metrics": upMetrics, "cadvisor": upCadvisor}[s.endpoint]
		if s.status != "served" {
			if _, ok := up[s.name]; ok {
				lacking = append(lacking, s.name)
			}
			continue
		}
		f, ok := up[s.name]
		if !ok {
			t.Logf("upstream showed no %s in this run (no sample yet, or its cAdvisor does not see this runtime)", s.name)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != s.typ {
			t.Errorf("test data says %s is a %s; upstream's is a %s", s.name, s.typ, got)
		}
	}
	t.Logf("mixin series upstream showed that nodelet lacks (docs/API.md says why): %v", lacking)
	var ours []string
	for name := range ourMetrics {
		if _, ok := upMetrics[name]; !ok && strings.HasPrefix(name, "kubelet_") {
			ours = append(ours, name)
		}
	}
	sort.Strings(ours)
	t.Logf("kubelet_ families nodelet showed and upstream did not in this run (no samples upstream): %v", ours)
}

// waitFamilies scrapes until every one of want has a series.
func waitFamilies(t *testing.T, what string, scrape func() (map[string]*dto.MetricFamily, error), want []string) map[string]*dto.MetricFamily {
	t.Helper()
	var fams map[string]*dto.MetricFamily
	poll.Within(t, 2*time.Minute, what+" to show "+strings.Join(want, ", "), func() (bool, string) {
		var err error
		if fams, err = scrape(); err != nil {
			return false, err.Error()
		}
		for _, name := range want {
			if len(fams[name].GetMetric()) == 0 {
				return false, "no " + name
			}
		}
		return true, ""
	})
	return fams
}

// diffFamilies fails for every family both expose whose type, label names
// or histogram buckets differ.
func diffFamilies(t *testing.T, endpoint string, up, ours map[string]*dto.MetricFamily) {
	t.Helper()
	shared := 0
	for name, o := range ours {
		u, ok := up[name]
		if !ok {
			continue
		}
		shared++
		if u.GetType() != o.GetType() {
			t.Errorf("%s %s: nodelet's is a %v, upstream's a %v", endpoint, name, o.GetType(), u.GetType())
			continue
		}
		if lu, lo := labelNames(u), labelNames(o); !slices.Equal(lu, lo) {
			t.Errorf("%s %s: nodelet's labels %v, upstream's %v", endpoint, name, lo, lu)
		}
		if o.GetType() == dto.MetricType_HISTOGRAM {
			if bu, bo := buckets(u), buckets(o); !slices.Equal(bu, bo) {
				t.Errorf("%s %s: nodelet's buckets %v, upstream's %v", endpoint, name, bo, bu)
			}
		}
	}
	var onlyUp []string
	for name := range up {
		if _, ok := ours[name]; !ok {
			onlyUp = append(onlyUp, name)
		}
	}
	sort.Strings(onlyUp)
	t.Logf("%s: %d families in both, nodelet %d, upstream %d; only upstream's: %v", endpoint, shared, len(ours), len(up), onlyUp)
}

func labelNames(f *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			set[l.GetName()] = true
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func buckets(f *dto.MetricFamily) []float64 {
	if len(f.GetMetric()) == 0 {
		return nil
	}
	var out []float64
	for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
		out = append(out, b.GetUpperBound())
	}
	return out
}

type mixinEntry struct{ endpoint, name, typ, status string }

// mixinTestData reads pkg/metrics/testdata/mixin-series.txt.
func mixinTestData(t *testing.T) []mixinEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(framework.RepoRoot(), "pkg", "metrics", "testdata", "mixin-series.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mixinEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if fl := strings.Fields(line); len(fl) == 5 {
			out = append(out, mixinEntry{fl[0], fl[1], fl[2], fl[4]})
		}
	}
	return out
}
