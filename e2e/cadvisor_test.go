//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// The pod whose cAdvisor series are checked against its cgroup files: one
// container burns CPU under a quota, the other writes 8 MiB to its
// writable layer (page cache, block I/O) and then sleeps, so its memory
// stays put. Each shell carries a marker in its argv to be found in /proc.
const cadvisorPodManifest = `apiVersion: v1
kind: Pod
metadata:
  name: cadv
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: busy
    image: busybox:1.35
    command: ["sh", "-c", "while true; do :; done", "cadv-busy-marker"]
    resources:
      limits: {cpu: 200m}
  - name: idle
    image: busybox:1.35
    command: ["sh", "-c", "dd if=/dev/zero of=/tmp/f bs=1M count=8 2>/dev/null; sync; while true; do sleep 1000; done", "cadv-idle-marker"]
    resources:
      limits: {memory: 64Mi}
`

const cadvisorPod = "cadv" + staticSuffix

// TestCadvisorMetrics scrapes /metrics/cadvisor of a standalone nodelet
// and checks a running pod's series against the kernel's own files: CPU
// usage lies between cpuacct.usage read before and after the scrape; the
// usage, working set, RSS and page cache of an idle container equal
// memory.usage_in_bytes, that - total_inactive_file, total_rss and total_cache
// whenever the files did not change across the scrape; the spec series
// equal the cpu and memory cgroup settings; the start time is no later
// than the container's process start and no earlier than the manifest;
// pod network counters lie between /proc/<pid>/net/dev reads; and the
// exposition parses as Prometheus parses it.
func TestCadvisorMetrics(t *testing.T) {
	rt := framework.StartRuntime(t)
	caFile, cert := clientPKI(t, t.TempDir())
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt,
		"--port", strconv.Itoa(port), "--address", "127.0.0.1",
		"--client-ca-file", caFile,
		"--authentication-token-webhook=false", "--authorization-mode", "AlwaysAllow",
	)
	written := time.Now()
	n.WriteManifest("cadv.yaml", cadvisorPodManifest)
	n.WaitPod(cadvisorPod, 90*time.Second, "busy and idle running", func(p *v1.Pod) bool {
		return containerRunning(p, "busy", "idle")
	})
	c := nodeClient{base: fmt.Sprintf("https://127.0.0.1:%d", port), cert: &cert}
	scrape := func(t *testing.T) map[string]*dto.MetricFamily {
		t.Helper()
		fams, err := parseExposition(c.get(t, "/metrics/cadvisor"))
		if err != nil {
			t.Fatalf("/metrics/cadvisor does not parse: %v", err)
		}
		return fams
	}
	busy := findProc(t, "cadv-busy-marker")
	idle := findProc(t, "cadv-idle-marker")
	// The idle container has written its file once its shell sleeps.
	poll.Within(t, 60*time.Second, "the idle container to sleep", func() (bool, string) {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", idle.pid, idle.pid))
		pid := strings.TrimSpace(string(kids))
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		return strings.TrimSpace(string(comm)) == "sleep", string(comm)
	})
	ctrLabels := func(name string) map[string]string {
		return map[string]string{"container": name, "pod": cadvisorPod, "namespace": "default"}
	}

	t.Run("labels and machine", func(t *testing.T) {
		fams := scrape(t)
		m := series(t, fams, "container_memory_working_set_bytes", ctrLabels("busy"))
		l := labelMap(m)
		if l["id"] != busy.cgroup["memory"] || l["image"] != "docker.io/library/busybox:1.35" || !strings.HasSuffix(l["id"], "/"+l["name"]) {
			t.Errorf("busy labels %v, cgroups %v", l, busy.cgroup)
		}
		cpu := series(t, fams, "container_cpu_usage_seconds_total", ctrLabels("busy"))
		if labelMap(cpu)["cpu"] != "total" || fams["container_cpu_usage_seconds_total"].GetType() != dto.MetricType_COUNTER {
			t.Errorf("cpu series %v", cpu)
		}
		// The pod level: container="", no image.
		pod := series(t, fams, "container_memory_working_set_bytes", map[string]string{"container": "", "pod": cadvisorPod})
		if labelMap(pod)["image"] != "" {
			t.Errorf("pod-level series %v", pod)
		}
		cores := 0
		if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
			cores = strings.Count("\n"+string(data), "\nprocessor\t")
		}
		if got := value(series(t, fams, "machine_cpu_cores", nil)); int(got) != cores {
			t.Errorf("machine_cpu_cores %v, /proc/cpuinfo %d", got, cores)
		}
		if got, want := value(series(t, fams, "machine_memory_bytes", nil)), float64(meminfo(t, "MemTotal")*1024); got != want {
			t.Errorf("machine_memory_bytes %v, MemTotal %v", got, want)
		}
	})

	// Upstream's read-only port serves the metrics and stats endpoints too,
	// unauthenticated (Prometheus setups scrape 10255), but nothing that
	// acts on a pod.
	t.Run("read-only port", func(t *testing.T) {
		base := fmt.Sprintf("http://127.0.0.1:%d", n.ReadOnlyPort)
		get := func(path string) (int, string) {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		code, body := get("/metrics/cadvisor")
		if code != http.StatusOK {
			t.Fatalf("read-only /metrics/cadvisor: %d %s", code, body)
		}
		fams, err := parseExposition(body)
		if err != nil {
			t.Fatalf("read-only /metrics/cadvisor does not parse: %v", err)
		}
		series(t, fams, "container_memory_working_set_bytes", ctrLabels("busy"))
		for _, path := range []string{"/metrics", "/metrics/resource", "/stats/summary"} {
			if code, body := get(path); code != http.StatusOK {
				t.Errorf("read-only %s: %d %s", path, code, body)
			}
		}
		for _, path := range []string{"/containerLogs/default/" + cadvisorPod + "/busy", "/configz", "/runningpods/"} {
			if code, _ := get(path); code != http.StatusNotFound {
				t.Errorf("read-only %s: %d, want 404", path, code)
			}
		}
	})

	t.Run("cpu between cpuacct reads", func(t *testing.T) {
		usage := func() uint64 { return readUint(t, busy.cgroupFile("cpuacct", "cpuacct.usage")) }
		before := usage()
		fams := scrape(t)
		after := usage()
		got := uint64(math.Round(value(series(t, fams, "container_cpu_usage_seconds_total", ctrLabels("busy"))) * 1e9))
		// float64 seconds keep whole nanoseconds only to ±1.
		if got+1 < before || got > after+1 {
			t.Errorf("container_cpu_usage_seconds_total %d ns, cpuacct.usage %d before and %d after the scrape", got, before, after)
		}
		if before == 0 {
			t.Error("the busy container has burnt no CPU")
		}
	})

	t.Run("memory equals the cgroup when it holds still", func(t *testing.T) {
		type mem struct{ usage, ws, rss, cache uint64 }
		read := func() mem {
			usage := readUint(t, idle.cgroupFile("memory", "memory.usage_in_bytes"))
			st := readStat(t, idle.cgroupFile("memory", "memory.stat"))
			ws := usage - min(st["total_inactive_file"], usage)
			return mem{usage: usage, ws: ws, rss: st["total_rss"], cache: st["total_cache"]}
		}
		poll.Within(t, 60*time.Second, "a scrape between equal memory readings matching them", func() (bool, string) {
			before := read()
			fams := scrape(t)
			after := read()
			got := mem{
				usage: uint64(value(series(t, fams, "container_memory_usage_bytes", ctrLabels("idle")))),
				ws:    uint64(value(series(t, fams, "container_memory_working_set_bytes", ctrLabels("idle")))),
				rss:   uint64(value(series(t, fams, "container_memory_rss", ctrLabels("idle")))),
				cache: uint64(value(series(t, fams, "container_memory_cache", ctrLabels("idle")))),
			}
			if before != after {
				return false, fmt.Sprintf("the cgroup changed during the scrape: %+v -> %+v", before, after)
			}
			if got != before {
				t.Fatalf("scraped %+v, cgroup %+v", got, before)
			}
			return true, ""
		})
		// The file written to the writable layer is in its usage once the
		// runtime has measured the layer again (containerd does so
		// periodically, stats_collect_period).
		poll.Within(t, 60*time.Second, "the writable layer usage to hold the 8 MiB written", func() (bool, string) {
			fs := value(series(t, scrape(t), "container_fs_usage_bytes", ctrLabels("idle")))
			return fs >= 8<<20, fmt.Sprint(fs)
		})
	})

	t.Run("spec equals the cgroup settings", func(t *testing.T) {
		fams := scrape(t)
		for _, f := range []struct {
			metric, ctr, ctrl, file string
		}{
			{"container_spec_cpu_quota", "busy", "cpu", "cpu.cfs_quota_us"},
			{"container_spec_cpu_period", "busy", "cpu", "cpu.cfs_period_us"},
			{"container_spec_cpu_shares", "busy", "cpu", "cpu.shares"},
			{"container_spec_memory_limit_bytes", "idle", "memory", "memory.limit_in_bytes"},
		} {
			p := map[string]proc{"busy": busy, "idle": idle}[f.ctr]
			want := readUint(t, p.cgroupFile(f.ctrl, f.file))
			if got := value(series(t, fams, f.metric, ctrLabels(f.ctr))); got != float64(want) {
				t.Errorf("%s{container=%q} %v, %s %d", f.metric, f.ctr, got, f.file, want)
			}
		}
		if q := value(series(t, fams, "container_spec_cpu_quota", ctrLabels("busy"))); q != 20000 {
			t.Errorf("cpu quota %v for limits.cpu 200m", q)
		}
	})

	t.Run("start time between manifest and process start", func(t *testing.T) {
		fams := scrape(t)
		start := value(series(t, fams, "container_start_time_seconds", ctrLabels("busy")))
		procStart := busy.startTime(t)
		// cAdvisor reports whole seconds; /proc/stat's btime is whole
		// seconds too, so the process start read here may be up to 1 s early.
		if start < float64(written.Unix()) || start > float64(procStart.Unix()+1) {
			t.Errorf("container_start_time_seconds %v; manifest written %v, process started %v", start, written.Unix(), procStart.Unix())
		}
	})

	t.Run("pod network between net/dev reads", func(t *testing.T) {
		before := netDev(t, busy.pid, "eth0")
		fams := scrape(t)
		after := netDev(t, busy.pid, "eth0")
		pod := map[string]string{"container": "", "pod": cadvisorPod, "interface": "eth0"}
		for _, f := range []struct {
			metric string
			field  int // of /proc/net/dev
		}{
			{"container_network_receive_bytes_total", 0}, {"container_network_receive_packets_total", 1},
			{"container_network_receive_packets_dropped_total", 3}, {"container_network_transmit_bytes_total", 8},
			{"container_network_transmit_packets_total", 9},
		} {
			got := uint64(value(series(t, fams, f.metric, pod)))
			if got < before[f.field] || got > after[f.field] {
				t.Errorf("%s %d, /proc/%d/net/dev eth0 %d before and %d after", f.metric, got, busy.pid, before[f.field], after[f.field])
			}
		}
	})
}

func parseExposition(text string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

// series returns the one series of name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	var found []*dto.Metric
	for _, m := range fams[name].GetMetric() {
		l := labelMap(m)
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
				break
			}
		}
		if ok {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series", name, want, len(found))
	}
	return found[0]
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, p := range m.GetLabel() {
		out[p.GetName()] = p.GetValue()
	}
	return out
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// proc is a container's main process found by its marker.
type proc struct {
	pid    int
	cgroup map[string]string // controller -> cgroup path
}

func (p proc) cgroupFile(ctrl, file string) string {
	return filepath.Join("/sys/fs/cgroup", ctrl, p.cgroup[ctrl], file)
}

// startTime is the process's start from /proc/<pid>/stat (clock ticks
// since boot, USER_HZ 100) and the boot time.
func (p proc) startTime(t *testing.T) time.Time {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ticks, _ := strconv.ParseUint(f[19], 10, 64) // field 22 overall
	stat, _ := os.ReadFile("/proc/stat")
	var btime int64
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return time.Unix(btime, 0).Add(time.Duration(ticks) * 10 * time.Millisecond)
}

// findProc finds the process with marker in its argv, waiting for it to
// show (a container reported running has its process, but the status may
// come from a listing that saw it before a restart).
func findProc(t *testing.T, marker string) proc {
	t.Helper()
	var p proc
	poll.Within(t, 30*time.Second, "a process with "+marker+" in its argv", func() (bool, string) {
		var ok bool
		p, ok = lookProc(marker)
		return ok, ""
	})
	return p
}

func lookProc(marker string) (proc, bool) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.Contains(string(cmd), "\x00"+marker) {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		p := proc{pid: pid, cgroup: map[string]string{}}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			for _, ctrl := range strings.Split(parts[1], ",") {
				p.cgroup[ctrl] = parts[2]
			}
		}
		return p, true
	}
	return proc{}, false
}

func readUint(t *testing.T, path string) uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func readStat(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			out[k], _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return out
}

func meminfo(t *testing.T, key string) uint64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/meminfo", key)
	return 0
}

// netDev returns an interface's /proc/<pid>/net/dev counters.
func netDev(t *testing.T, pid int, iface string) []uint64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == iface {
			var out []uint64
			for _, f := range strings.Fields(rest) {
				v, _ := strconv.ParseUint(f, 10, 64)
				out = append(out, v)
			}
			return out
		}
	}
	t.Fatalf("no %s in /proc/%d/net/dev", iface, pid)
	return nil
}

// TestMetricsThroughNodeProxy scrapes nodelet as a Prometheus set up by
// kube-prometheus does when it goes through the API server: `kubectl get
// --raw /api/v1/nodes/<node>/proxy/metrics/cadvisor` and .../metrics. The
// static pod's cAdvisor series and the kubelet series the mixin's
// dashboard and alerts join on must be there, and both expositions parse.
func TestMetricsThroughNodeProxy(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	port := framework.FreePort(t)
	// The API server's node proxy refuses loopback node addresses: the
	// node is reached at the host's own address, as in a cluster.
	ip := framework.HostIP(t)
	n := framework.StartNodelet(t, rt,
		"--kubeconfig", cluster.NodeKubeconfig,
		"--client-ca-file", cluster.CAFile,
		"--node-ip", ip, "--address", ip, "--port", strconv.Itoa(port),
	)
	poll.Within(t, 60*time.Second, "the node to be Ready", func() (bool, string) {
		out, err := cluster.Kubectl("get", "node", framework.NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && out == "True", fmt.Sprint(out, err)
	})
	n.WriteManifest("cadv.yaml", cadvisorPodManifest)
	proxy := "/api/v1/nodes/" + framework.NodeName + "/proxy"
	scrape := func(path string) (map[string]*dto.MetricFamily, string) {
		out, err := cluster.Kubectl("get", "--raw", proxy+path)
		if err != nil {
			return nil, fmt.Sprintf("kubectl get --raw %s: %v %.200s", path, err, out)
		}
		fams, err := parseExposition(out)
		if err != nil {
			t.Fatalf("%s does not parse: %v", path, err)
		}
		return fams, ""
	}
	poll.Within(t, 90*time.Second, "the static pod's series on /metrics/cadvisor through the node proxy", func() (bool, string) {
		fams, why := scrape("/metrics/cadvisor")
		if fams == nil {
			return false, why
		}
		for _, m := range fams["container_cpu_usage_seconds_total"].GetMetric() {
			if l := labelMap(m); l["container"] == "busy" && l["pod"] == cadvisorPod && l["namespace"] == "default" && l["image"] != "" {
				return len(fams["machine_cpu_cores"].GetMetric()) == 1, "no machine_cpu_cores"
			}
		}
		return false, "no busy container series"
	})

	// The pod's first sync may still be finishing when its containers
	// show: wait for every family the mixin reads.
	var fams map[string]*dto.MetricFamily
	poll.Within(t, 60*time.Second, "the kubelet series on /metrics through the node proxy", func() (bool, string) {
		var why string
		if fams, why = scrape("/metrics"); fams == nil {
			return false, why
		}
		for _, name := range []string{"kubelet_node_name", "kubelet_running_pods", "kubelet_running_containers", "kubelet_pod_start_duration_seconds",
			"kubelet_pod_worker_duration_seconds", "kubelet_runtime_operations_total", "kubelet_pleg_relist_duration_seconds",
			"kubelet_http_requests_total", "rest_client_requests_total", "rest_client_request_duration_seconds",
			"process_resident_memory_bytes", "go_goroutines"} {
			if len(fams[name].GetMetric()) == 0 {
				return false, "no " + name
			}
		}
		return true, ""
	})
	if m := series(t, fams, "kubelet_node_name", map[string]string{"node": framework.NodeName}); value(m) != 1 {
		t.Errorf("kubelet_node_name %v", m)
	}
	if h := series(t, fams, "kubelet_pleg_relist_duration_seconds", nil); h.GetHistogram().GetSampleCount() == 0 {
		t.Error("no relist observed")
	}
	// The scrapes above went through the node API: counted as upstream
	// counts them.
	if m := series(t, fams, "kubelet_http_requests_total", map[string]string{"path": "metrics/cadvisor", "server_type": "readwrite", "method": "GET"}); value(m) < 1 {
		t.Errorf("kubelet_http_requests_total %v", m)
	}
}
