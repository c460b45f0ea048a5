package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/stats"
)

func u(v uint64) *uint64 { return &v }

// parseText parses an exposition as Prometheus does (legacy names).
func parseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}

// fakeDetail is a node with pods of n containers each.
func fakeDetail(pods, n int) *stats.Detail {
	t0 := metav1.NewTime(time.Unix(1800000000, 0))
	d := &stats.Detail{
		Summary:       &statsapi.Summary{},
		Containers:    map[stats.ContainerKey]stats.ContainerDetail{},
		PodPackets:    map[string][]stats.InterfacePackets{},
		ImageFsDevice: "/dev/sda1",
		Machine:       stats.MachineInfo{Cores: 2, MemoryBytes: 8 << 30, MachineID: "m", SystemUUID: "s", BootID: "b"},
	}
	for p := 0; p < pods; p++ {
		uid := fmt.Sprintf("uid-%d", p)
		ps := statsapi.PodStats{
			PodRef:    statsapi.PodReference{Name: fmt.Sprintf("pod-%d", p), Namespace: "ns", UID: uid},
			StartTime: t0,
			CPU:       &statsapi.CPUStats{Time: t0, UsageCoreNanoSeconds: u(3e9)},
			Memory:    &statsapi.MemoryStats{Time: t0, WorkingSetBytes: u(3000), RSSBytes: u(2000), UsageBytes: u(4000)},
			Network: &statsapi.NetworkStats{Time: t0, Interfaces: []statsapi.InterfaceStats{
				{Name: "eth0", RxBytes: u(77), TxBytes: u(88), RxErrors: u(1), TxErrors: u(0)}}},
		}
		d.PodPackets[uid] = []stats.InterfacePackets{{Name: "eth0", RxPackets: 5, RxDropped: 1, TxPackets: 6, TxDropped: 2}}
		for c := 0; c < n; c++ {
			name := fmt.Sprintf("c%d", c)
			ps.Containers = append(ps.Containers, statsapi.ContainerStats{
				Name: name, StartTime: metav1.NewTime(time.Unix(1800000001, 0)),
				CPU:    &statsapi.CPUStats{Time: t0, UsageCoreNanoSeconds: u(1500000000)},
				Memory: &statsapi.MemoryStats{Time: t0, WorkingSetBytes: u(1000), RSSBytes: u(600), UsageBytes: u(1200)},
				Rootfs: &statsapi.FsStats{Time: t0, UsedBytes: u(4096), CapacityBytes: u(1 << 30)},
			})
			id := fmt.Sprintf("%s-%s", uid, name)
			d.Containers[stats.ContainerKey{PodUID: uid, Name: name}] = stats.ContainerDetail{
				ID: id, Image: "busybox:1", CgroupPath: "/k8s.io/" + id,
				Cgroup: &stats.CgroupStats{
					MemoryCache: 512, HasMemoryCache: true, MemoryLimit: 9223372036854771712, HasMemoryLimit: true,
					CPUShares: 2, CPUPeriod: 100000, HasCPU: true,
					IO:           []stats.DeviceIO{{Device: "/dev/sda", Read: 10, Write: 20, ReadOps: 1, WriteOps: 2}},
					Mem:          [stats.NumMemExtras]stats.OptUint{stats.MemMaxUsage: {V: 9000, OK: true}, stats.MemFailcnt: {V: 3, OK: true}},
					CPUUserNanos: 1e9, CPUSystemNanos: 5e8, HasCPUAcctStat: true,
					MemorySwap: 7, HasMemorySwap: true, CFSPeriods: 100, CFSThrottledPeriods: 5, CFSThrottledNanos: 2500000000, HasCFS: true,
				},
			}
		}
		d.Summary.Pods = append(d.Summary.Pods, ps)
	}
	return d
}

func scrapeCadvisor(t testing.TB, g *CadvisorGatherer) string {
	t.Helper()
	srv := httptest.NewServer(CadvisorHandlerFor(g))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func TestCadvisorMetrics(t *testing.T) {
	now := time.Unix(1800000100, 0)
	d := fakeDetail(1, 1)
	c := d.Containers[stats.ContainerKey{PodUID: "uid-0", Name: "c0"}]
	c.Cgroup.CPUQuota = 50000
	g := NewCadvisorGatherer(func(context.Context) (*stats.Detail, error) { return d, nil }, func() time.Time { return now })
	text := scrapeCadvisor(t, g)

	fams, err := parseText(strings.NewReader(text))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, text)
	}
	for name, typ := range map[string]dto.MetricType{
		"container_cpu_usage_seconds_total": dto.MetricType_COUNTER, "container_memory_working_set_bytes": dto.MetricType_GAUGE,
		"container_network_receive_bytes_total": dto.MetricType_COUNTER, "container_fs_reads_bytes_total": dto.MetricType_COUNTER,
		"machine_cpu_cores": dto.MetricType_GAUGE, "container_spec_cpu_quota": dto.MetricType_GAUGE,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("%s: %v, want type %v", name, f, typ)
		}
	}
	ctr := `container="c0",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"`
	podl := `container="",id="",image="",name="",namespace="ns",pod="pod-0"`
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="c0",cpu="total",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 1.5 1800000000000`,
		`container_cpu_usage_seconds_total{container="",cpu="total",id="",image="",name="",namespace="ns",pod="pod-0"} 3 1800000000000`,
		`container_memory_working_set_bytes{` + ctr + `} 1000 1800000000000`,
		`container_memory_rss{` + ctr + `} 600 1800000000000`,
		`container_memory_usage_bytes{` + ctr + `} 1200 1800000000000`,
		`container_memory_cache{` + ctr + `} 512 1800000100000`,
		`container_memory_working_set_bytes{` + podl + `} 3000 1800000000000`,
		`container_network_receive_bytes_total{container="",id="",image="",interface="eth0",name="",namespace="ns",pod="pod-0"} 77 1800000000000`,
		`container_network_transmit_bytes_total{container="",id="",image="",interface="eth0",name="",namespace="ns",pod="pod-0"} 88 1800000000000`,
		`container_fs_usage_bytes{container="c0",device="/dev/sda1",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 4096 1800000000000`,
		`container_fs_limit_bytes{container="c0",device="/dev/sda1",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 1.073741824e+09 1800000000000`,
		`container_fs_reads_bytes_total{container="c0",device="/dev/sda",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 10 1800000100000`,
		`container_fs_writes_bytes_total{container="c0",device="/dev/sda",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 20 1800000100000`,
		`container_start_time_seconds{` + ctr + `} 1.800000001e+09` + "\n",
		`container_start_time_seconds{` + podl + `} 1.8e+09` + "\n",
		`container_last_seen{` + ctr + `} 1.8000001e+09 1800000100000`,
		`container_spec_cpu_shares{` + ctr + `} 2` + "\n",
		`container_spec_cpu_period{` + ctr + `} 100000` + "\n",
		`container_spec_cpu_quota{` + ctr + `} 50000` + "\n",
		`container_cpu_cfs_periods_total{` + ctr + `} 100 1800000100000`,
		`container_cpu_cfs_throttled_periods_total{` + ctr + `} 5 1800000100000`,
		`container_cpu_cfs_throttled_seconds_total{` + ctr + `} 2.5 1800000100000`,
		`container_memory_swap{` + ctr + `} 7 1800000100000`,
		`container_memory_max_usage_bytes{` + ctr + `} 9000 1800000100000`,
		`container_memory_failcnt{` + ctr + `} 3 1800000100000`,
		`container_cpu_user_seconds_total{` + ctr + `} 1 1800000100000`,
		`container_cpu_system_seconds_total{` + ctr + `} 0.5 1800000100000`,
		`container_creation_time_seconds{` + ctr + `} 1.800000001e+09` + "\n",
		`machine_swap_bytes{boot_id="b",machine_id="m",system_uuid="s"} 0`,
		`container_fs_reads_total{container="c0",device="/dev/sda",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 1 1800000100000`,
		`container_fs_writes_total{container="c0",device="/dev/sda",id="/k8s.io/uid-0-c0",image="busybox:1",name="uid-0-c0",namespace="ns",pod="pod-0"} 2 1800000100000`,
		`container_network_receive_packets_total{container="",id="",image="",interface="eth0",name="",namespace="ns",pod="pod-0"} 5 1800000000000`,
		`container_network_transmit_packets_dropped_total{container="",id="",image="",interface="eth0",name="",namespace="ns",pod="pod-0"} 2 1800000000000`,
		`container_network_receive_errors_total{container="",id="",image="",interface="eth0",name="",namespace="ns",pod="pod-0"} 1 1800000000000`,
		// The kernel's "no limit" is reported as 0, as cAdvisor.
		`container_spec_memory_limit_bytes{` + ctr + `} 0` + "\n",
		`machine_cpu_cores{boot_id="b",machine_id="m",system_uuid="s"} 2`,
		`machine_memory_bytes{boot_id="b",machine_id="m",system_uuid="s"} 8.589934592e+09`,
		"container_scrape_error 0",
		"# TYPE container_cpu_usage_seconds_total counter",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s\n%s", want, text)
		}
	}
	// The pod level has no per-container figures.
	for _, notWant := range []string{`container_spec_cpu_shares{` + podl, "container_memory_kernel_usage", `container_fs_usage_bytes{container=""`, `container_network_receive_bytes_total{container="c0"`} {
		if strings.Contains(text, notWant) {
			t.Errorf("unexpected %s", notWant)
		}
	}

	// No quota: no container_spec_cpu_quota, as cAdvisor. A container that
	// went away takes its label sets with it.
	c.Cgroup.CPUQuota = 0
	text = scrapeCadvisor(t, g)
	if strings.Contains(text, "container_spec_cpu_quota") || strings.Contains(text, "container_cpu_cfs_periods_total") {
		t.Error("quota or CFS counters reported without a quota")
	}
	d.Summary.Pods = nil
	_ = scrapeCadvisor(t, g)
	if len(g.labels) != 1 { // the machine's
		t.Errorf("label sets kept for gone containers: %d", len(g.labels))
	}
}

func TestCadvisorMetricsStatsFail(t *testing.T) {
	g := NewCadvisorGatherer(func(context.Context) (*stats.Detail, error) { return nil, errors.New("runtime down") }, time.Now)
	text := scrapeCadvisor(t, g)
	if !strings.Contains(text, "container_scrape_error 1") || strings.Contains(text, "container_cpu") {
		t.Errorf("failed scrape:\n%s", text)
	}
}

// TestCadvisorMetricsConcurrent scrapes from several goroutines (run with
// -race): the arenas and label sets must not be shared while in use.
func TestCadvisorMetricsConcurrent(t *testing.T) {
	d := fakeDetail(5, 3)
	g := NewCadvisorGatherer(func(context.Context) (*stats.Detail, error) { return d, nil }, time.Now)
	srv := httptest.NewServer(CadvisorHandlerFor(g))
	defer srv.Close()
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 5; j++ {
				resp, err := srv.Client().Get(srv.URL)
				if err != nil {
					errs <- err
					return
				}
				fams, err := parseText(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if n := len(fams["container_memory_working_set_bytes"].GetMetric()); n != 5*3+5 {
					errs <- fmt.Errorf("%d working set series", n)
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkCadvisorScrape is one scrape of /metrics/cadvisor over a fake
// source of 100 containers (50 pods of 2), encoding included.
func BenchmarkCadvisorScrape(b *testing.B) {
	d := fakeDetail(50, 2)
	g := NewCadvisorGatherer(func(context.Context) (*stats.Detail, error) { return d, nil }, time.Now)
	h := CadvisorHandlerFor(g)
	req := httptest.NewRequest("GET", "/metrics/cadvisor", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// TestCadvisorSeriesBound: the arena reserved for a scrape holds every
// sample it makes (a sample beyond it would be dropped), with nothing
// pooled before.
func TestCadvisorSeriesBound(t *testing.T) {
	for _, d := range []*stats.Detail{fakeDetail(0, 0), fakeDetail(1, 1), fakeDetail(7, 3)} {
		for _, cd := range d.Containers {
			cd.Cgroup.CPUQuota, cd.Cgroup.HasCFS = 50000, true
			for i := range cd.Cgroup.Mem {
				cd.Cgroup.Mem[i] = stats.OptUint{V: 1, OK: true}
			}
		}
		g := NewCadvisorGatherer(func(context.Context) (*stats.Detail, error) { return d, nil }, time.Now)
		fams, done, _ := g.Gather()
		n := 0
		for _, f := range fams {
			n += len(f.GetMetric())
		}
		done()
		if bound := seriesBound(d); n > bound || n == 0 || g.dropped != 0 {
			t.Errorf("%d pods: %d samples, bound %d, %d dropped", len(d.Summary.Pods), n, bound, g.dropped)
		}
	}
}
