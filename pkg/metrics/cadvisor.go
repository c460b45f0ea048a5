package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/stats"
)

// DetailFunc returns the full summary with its details (stats.Provider.Detailed).
type DetailFunc func(ctx context.Context) (*stats.Detail, error)

// maxMemoryLimit is where cAdvisor stops believing a memory limit: the
// kernel's "no limit" is the largest page-aligned int64, reported as 0.
const maxMemoryLimit = uint64(1) << 62

// cAdvisor's families, in the order they are exposed (by name). The
// names, help, types, labels and units are cAdvisor's (as the upstream
// kubelet serves them on /metrics/cadvisor), so that the
// kubernetes-mixin, kube-prometheus rules and dashboards read them.
const (
	famCFSPeriods = iota
	famCFSThrottledPeriods
	famCFSThrottledSeconds
	famCPU
	famCPUSystem
	famCPUUser
	famFsLimit
	famFsReads
	famFsReadOps
	famFsUsage
	famFsWrites
	famFsWriteOps
	famLastSeen
	famMemCache
	famMemFailcnt
	famMemKernel
	famMemMappedFile
	famMemMaxUsage
	famMemRSS
	famMemSwap
	famMemActiveFile
	famMemInactiveFile
	famMemUsage
	famMemWS
	famNetRx
	famNetRxErrors
	famNetRxDropped
	famNetRxPackets
	famNetTx
	famNetTxErrors
	famNetTxDropped
	famNetTxPackets
	famScrapeError
	famCreation
	famCPUPeriod
	famCPUQuota
	famCPUShares
	famMemLimit
	famStart
	famMachineCores
	famMachineMem
	famMachineSwap
	numFamilies
)

type family struct {
	name, help string
	typ        dto.MetricType
	// extra is the one label beside the container's (cpu, device,
	// interface); "" for none.
	extra string
}

var (
	gauge   = dto.MetricType_GAUGE
	counter = dto.MetricType_COUNTER

	cadvisorFamilies = [numFamilies]family{
		famCFSPeriods:          {"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", counter, ""},
		famCFSThrottledPeriods: {"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", counter, ""},
		famCFSThrottledSeconds: {"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", counter, ""},
		famCPU:                 {"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, "cpu"},
		famCPUSystem:           {"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter, ""},
		famCPUUser:             {"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter, ""},
		famMemFailcnt:          {"container_memory_failcnt", "Number of memory usage hits limits", counter, ""},
		famMemKernel:           {"container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", gauge, ""},
		famMemMappedFile:       {"container_memory_mapped_file", "Size of memory mapped files in bytes.", gauge, ""},
		famMemMaxUsage:         {"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", gauge, ""},
		famMemActiveFile:       {"container_memory_total_active_file_bytes", "Current total active file in bytes.", gauge, ""},
		famMemInactiveFile:     {"container_memory_total_inactive_file_bytes", "Current total inactive file in bytes.", gauge, ""},
		famCreation:            {"container_creation_time_seconds", "Container creation time since unix epoch in seconds.", gauge, ""},
		famMachineSwap:         {"machine_swap_bytes", "Amount of swap memory available on the machine.", gauge, ""},
		famFsReadOps:           {"container_fs_reads_total", "Cumulative count of reads completed", counter, "device"},
		famFsWriteOps:          {"container_fs_writes_total", "Cumulative count of writes completed", counter, "device"},
		famMemSwap:             {"container_memory_swap", "Container swap usage in bytes.", gauge, ""},
		famNetRxDropped:        {"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", counter, "interface"},
		famNetRxPackets:        {"container_network_receive_packets_total", "Cumulative count of packets received", counter, "interface"},
		famNetTxDropped:        {"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", counter, "interface"},
		famNetTxPackets:        {"container_network_transmit_packets_total", "Cumulative count of packets transmitted", counter, "interface"},
		famNetRxErrors:         {"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", counter, "interface"},
		famNetTxErrors:         {"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", counter, "interface"},
		famFsLimit:             {"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge, "device"},
		famFsReads:             {"container_fs_reads_bytes_total", "Cumulative count of bytes read", counter, "device"},
		famFsUsage:             {"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge, "device"},
		famFsWrites:            {"container_fs_writes_bytes_total", "Cumulative count of bytes written", counter, "device"},
		famLastSeen:            {"container_last_seen", "Last time a container was seen by the exporter", gauge, ""},
		famMemCache:            {"container_memory_cache", "Number of bytes of page cache memory.", gauge, ""},
		famMemRSS:              {"container_memory_rss", "Size of RSS in bytes.", gauge, ""},
		famMemUsage:            {"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge, ""},
		famMemWS:               {"container_memory_working_set_bytes", "Current working set in bytes.", gauge, ""},
		famNetRx:               {"container_network_receive_bytes_total", "Cumulative count of bytes received", counter, "interface"},
		famNetTx:               {"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", counter, "interface"},
		famScrapeError:         {"container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", gauge, ""},
		famCPUPeriod:           {"container_spec_cpu_period", "CPU period of the container.", gauge, ""},
		famCPUQuota:            {"container_spec_cpu_quota", "CPU quota of the container.", gauge, ""},
		famCPUShares:           {"container_spec_cpu_shares", "CPU share of the container.", gauge, ""},
		famMemLimit:            {"container_spec_memory_limit_bytes", "Memory limit for the container.", gauge, ""},
		famStart:               {"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge, ""},
		famMachineCores:        {"machine_cpu_cores", "Number of logical CPU cores.", gauge, ""},
		famMachineMem:          {"machine_memory_bytes", "Amount of memory installed on the machine.", gauge, ""},
	}
	// maxSeriesPerContainer bounds the series of one container beside its
	// per-device and per-interface ones.
	maxSeriesPerContainer = numFamilies
)

// CadvisorHandler serves /metrics/cadvisor from detail: cAdvisor's series
// for every running container and pod, and the machine's. Consumers
// compute rates from the samples' timestamps, which are the times the
// figures were measured.
func CadvisorHandler(detail DetailFunc) http.Handler {
	return CadvisorHandlerFor(NewCadvisorGatherer(detail, time.Now))
}

// CadvisorHandlerFor serves g's families.
func CadvisorHandlerFor(g *CadvisorGatherer) http.Handler {
	return promhttp.HandlerForTransactional(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// CadvisorGatherer builds cAdvisor's metric families straight from a
// stats.Detail. A scrape of 100 containers makes ~2000 samples; building
// them through prometheus.Collector would allocate a metric, its label
// pairs and a protobuf message for each. Here the label pairs of each
// container are built once and reused while the container lives, and the
// samples of a scrape live in an arena returned to a pool when the
// response is written (TransactionalGatherer's done).
type CadvisorGatherer struct {
	detail DetailFunc
	now    func() time.Time
	pool   sync.Pool

	mu      sync.Mutex
	gen     uint64
	labels  map[labelKey]*labelSet
	dropped int // samples beyond seriesBound (a bug; tests expect none)
}

var _ prometheus.TransactionalGatherer = (*CadvisorGatherer)(nil)

// NewCadvisorGatherer returns a gatherer over detail; now stamps
// container_last_seen.
func NewCadvisorGatherer(detail DetailFunc, now func() time.Time) *CadvisorGatherer {
	return &CadvisorGatherer{detail: detail, now: now, labels: map[labelKey]*labelSet{}}
}

// labelSet is the label pairs of one container (or pod, or the machine):
// the base set, and the base set with each extra label value seen.
type labelSet struct {
	gen    uint64
	values labelValues
	base   []*dto.LabelPair
	extra  map[extraKey][]*dto.LabelPair
}

type extraKey struct{ name, value string }

// labelValues holds the values of containerLabelNames (or, first three,
// machineLabelNames).
type labelValues [6]string

// Gather implements prometheus.TransactionalGatherer.
func (g *CadvisorGatherer) Gather() ([]*dto.MetricFamily, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), summaryTimeout)
	defer cancel()
	d, err := g.detail(ctx)
	now := g.now()

	a, _ := g.pool.Get().(*arena)
	if a == nil {
		a = &arena{}
	}
	done := func() { a.reset(); g.pool.Put(a) }

	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	b := builder{g: g, a: a, now: now}
	if err != nil {
		klog.V(2).InfoS("cAdvisor metrics: stats failed", "err", err)
		a.reserve(1)
		b.add(famScrapeError, nil, 1, time.Time{})
		return a.families(), done, nil
	}
	a.reserve(seriesBound(d))
	b.add(famScrapeError, nil, 0, time.Time{})
	if d.MachineErr == nil {
		m := b.labels(labelKey{'m', ""}, labelValues{d.Machine.BootID, d.Machine.MachineID, d.Machine.SystemUUID}, machineLabelNames)
		b.add(famMachineCores, m.base, float64(d.Machine.Cores), time.Time{})
		b.add(famMachineMem, m.base, float64(d.Machine.MemoryBytes), time.Time{})
		b.add(famMachineSwap, m.base, float64(d.Machine.SwapBytes), time.Time{})
	} else {
		klog.V(2).InfoS("cAdvisor metrics: machine info", "err", d.MachineErr)
	}
	for i := range d.Summary.Pods {
		b.pod(d, &d.Summary.Pods[i])
	}
	// Labels of containers and pods gone since the last scrape go.
	for k, ls := range g.labels {
		if ls.gen != g.gen {
			delete(g.labels, k)
		}
	}
	return a.families(), done, nil
}

// Label names, sorted, as the exposition wants them.
var (
	containerLabelNames = []string{"container", "id", "image", "name", "namespace", "pod"}
	machineLabelNames   = []string{"boot_id", "machine_id", "system_uuid"}
)

// seriesBound is an upper bound of the samples d makes.
func seriesBound(d *stats.Detail) int {
	n := 1 + 3 // container_scrape_error; machine_cpu_cores, _memory_bytes, _swap_bytes
	for _, p := range d.Summary.Pods {
		n += maxSeriesPerContainer
		if p.Network != nil {
			n += 8 * len(p.Network.Interfaces)
		}
		for _, c := range p.Containers {
			n += maxSeriesPerContainer
			if cd, ok := d.Containers[stats.ContainerKey{PodUID: p.PodRef.UID, Name: c.Name}]; ok && cd.Cgroup != nil {
				n += 4 * len(cd.Cgroup.IO)
			}
		}
	}
	return n
}

type builder struct {
	g   *CadvisorGatherer
	a   *arena
	now time.Time
}

// pod adds the pod-level series (container="", as cAdvisor's pod cgroup)
// and each container's.
func (b *builder) pod(d *stats.Detail, p *statsapi.PodStats) {
	ref := p.PodRef
	// The pod level has no cgroup of its own in nodelet (no pod cgroups
	// yet): id, image and name are empty, as cAdvisor's for a pod cgroup
	// are apart from id.
	ls := b.labels(labelKey{'p', ref.UID}, labelValues{"", "", "", "", ref.Namespace, ref.Name}, containerLabelNames)
	b.usage(ls, p.CPU, p.Memory)
	if n := p.Network; n != nil {
		for _, it := range n.Interfaces {
			lp := b.g.extra(ls, "interface", it.Name)
			if it.RxBytes != nil {
				b.add(famNetRx, lp, float64(*it.RxBytes), n.Time.Time)
			}
			if it.TxBytes != nil {
				b.add(famNetTx, lp, float64(*it.TxBytes), n.Time.Time)
			}
			if it.RxErrors != nil {
				b.add(famNetRxErrors, lp, float64(*it.RxErrors), n.Time.Time)
			}
			if it.TxErrors != nil {
				b.add(famNetTxErrors, lp, float64(*it.TxErrors), n.Time.Time)
			}
			for _, pk := range d.PodPackets[ref.UID] {
				if pk.Name == it.Name {
					b.add(famNetRxPackets, lp, float64(pk.RxPackets), n.Time.Time)
					b.add(famNetRxDropped, lp, float64(pk.RxDropped), n.Time.Time)
					b.add(famNetTxPackets, lp, float64(pk.TxPackets), n.Time.Time)
					b.add(famNetTxDropped, lp, float64(pk.TxDropped), n.Time.Time)
				}
			}
		}
	}
	if !p.StartTime.IsZero() {
		// The sandbox's creation is both, as the container's below.
		b.add(famCreation, ls.base, float64(p.StartTime.Unix()), time.Time{})
		b.add(famStart, ls.base, float64(p.StartTime.Unix()), time.Time{})
	}
	b.add(famLastSeen, ls.base, float64(b.now.Unix()), b.now)

	for i := range p.Containers {
		c := &p.Containers[i]
		cd, ok := d.Containers[stats.ContainerKey{PodUID: ref.UID, Name: c.Name}]
		if !ok {
			continue
		}
		ls := b.labels(labelKey{'c', cd.ID}, labelValues{c.Name, cd.CgroupPath, cd.Image, cd.ID, ref.Namespace, ref.Name}, containerLabelNames)
		b.usage(ls, c.CPU, c.Memory)
		if fs := c.Rootfs; fs != nil && d.ImageFsDevice != "" {
			lp := b.g.extra(ls, "device", d.ImageFsDevice)
			if fs.UsedBytes != nil {
				b.add(famFsUsage, lp, float64(*fs.UsedBytes), fs.Time.Time)
			}
			if fs.CapacityBytes != nil {
				b.add(famFsLimit, lp, float64(*fs.CapacityBytes), fs.Time.Time)
			}
		}
		if !c.StartTime.IsZero() {
			// The summary's start time is the container's creation, which
			// is what cAdvisor reports for both with containerd.
			b.add(famCreation, ls.base, float64(c.StartTime.Unix()), time.Time{})
			b.add(famStart, ls.base, float64(c.StartTime.Unix()), time.Time{})
		}
		b.add(famLastSeen, ls.base, float64(b.now.Unix()), b.now)
		if cg := cd.Cgroup; cg != nil {
			b.cgroup(ls, cg)
		}
	}
}

// usage adds CPU and memory, stamped with the runtime's measurement time.
func (b *builder) usage(ls *labelSet, cpu *statsapi.CPUStats, mem *statsapi.MemoryStats) {
	if cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		// The kubelet's cAdvisor does not collect per-CPU usage: one
		// series, cpu="total".
		b.add(famCPU, b.g.extra(ls, "cpu", "total"), float64(*cpu.UsageCoreNanoSeconds)/1e9, cpu.Time.Time)
	}
	if mem == nil {
		return
	}
	for _, f := range []struct {
		fam int
		v   *uint64
	}{{famMemWS, mem.WorkingSetBytes}, {famMemRSS, mem.RSSBytes}, {famMemUsage, mem.UsageBytes}} {
		if f.v != nil {
			b.add(f.fam, ls.base, float64(*f.v), mem.Time.Time)
		}
	}
}

// cgroup adds what only the cgroup files give, stamped now (read now).
func (b *builder) cgroup(ls *labelSet, cg *stats.CgroupStats) {
	if cg.HasMemoryCache {
		b.add(famMemCache, ls.base, float64(cg.MemoryCache), b.now)
	}
	if cg.HasMemorySwap {
		b.add(famMemSwap, ls.base, float64(cg.MemorySwap), b.now)
	}
	for i, fam := range [...]int{stats.MemMaxUsage: famMemMaxUsage, stats.MemFailcnt: famMemFailcnt, stats.MemKernel: famMemKernel,
		stats.MemMappedFile: famMemMappedFile, stats.MemActiveFile: famMemActiveFile, stats.MemInactiveFile: famMemInactiveFile} {
		if v := cg.Mem[i]; v.OK {
			b.add(fam, ls.base, float64(v.V), b.now)
		}
	}
	if cg.HasCPUAcctStat {
		b.add(famCPUUser, ls.base, float64(cg.CPUUserNanos)/1e9, b.now)
		b.add(famCPUSystem, ls.base, float64(cg.CPUSystemNanos)/1e9, b.now)
	}
	if cg.HasMemoryLimit {
		v := cg.MemoryLimit
		if v > maxMemoryLimit {
			v = 0
		}
		b.add(famMemLimit, ls.base, float64(v), time.Time{})
	}
	if cg.HasCPU {
		b.add(famCPUPeriod, ls.base, float64(cg.CPUPeriod), time.Time{})
		if cg.CPUQuota != 0 {
			b.add(famCPUQuota, ls.base, float64(cg.CPUQuota), time.Time{})
			// As cAdvisor, CFS counters only for a container with a quota.
			if cg.HasCFS {
				b.add(famCFSPeriods, ls.base, float64(cg.CFSPeriods), b.now)
				b.add(famCFSThrottledPeriods, ls.base, float64(cg.CFSThrottledPeriods), b.now)
				b.add(famCFSThrottledSeconds, ls.base, float64(cg.CFSThrottledNanos)/1e9, b.now)
			}
		}
		b.add(famCPUShares, ls.base, float64(cg.CPUShares), time.Time{})
	}
	for _, io := range cg.IO {
		lp := b.g.extra(ls, "device", io.Device)
		b.add(famFsReads, lp, float64(io.Read), b.now)
		b.add(famFsWrites, lp, float64(io.Write), b.now)
		b.add(famFsReadOps, lp, float64(io.ReadOps), b.now)
		b.add(famFsWriteOps, lp, float64(io.WriteOps), b.now)
	}
}

// labels returns the label set under key with values, building it when
// it is new or its values changed, and marks it seen in this scrape.
// values is an array so that an unchanged set costs no allocation.
func (b *builder) labels(key labelKey, values labelValues, names []string) *labelSet {
	g := b.g
	ls, ok := g.labels[key]
	if !ok || ls.values != values {
		ls = &labelSet{values: values}
		ls.base = pairs(names, ls.values[:len(names)])
		g.labels[key] = ls
	}
	ls.gen = g.gen
	return ls
}

// extra returns ls's pairs with name=value merged in name order.
func (g *CadvisorGatherer) extra(ls *labelSet, name, value string) []*dto.LabelPair {
	if lp, ok := ls.extra[extraKey{name, value}]; ok {
		return lp
	}
	k := &extraKey{name, value} // its strings back the new pair
	lp := make([]*dto.LabelPair, 0, len(ls.base)+1)
	added := false
	for _, p := range ls.base {
		if !added && name < p.GetName() {
			lp = append(lp, &dto.LabelPair{Name: &k.name, Value: &k.value})
			added = true
		}
		lp = append(lp, p)
	}
	if !added {
		lp = append(lp, &dto.LabelPair{Name: &k.name, Value: &k.value})
	}
	if ls.extra == nil {
		ls.extra = map[extraKey][]*dto.LabelPair{}
	}
	ls.extra[*k] = lp
	return lp
}

// labelKey names a label set: a container by runtime ID, a pod by UID, or
// the machine.
type labelKey struct {
	kind byte // 'c', 'p', 'm'
	id   string
}

func pairs(names, values []string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, len(names))
	for i := range names {
		out[i] = &dto.LabelPair{Name: &names[i], Value: &values[i]}
	}
	return out
}

// add appends one sample; a zero ts means none (cAdvisor stamps usage,
// not spec or start time).
func (b *builder) add(fam int, labels []*dto.LabelPair, v float64, ts time.Time) {
	a := b.a
	i := len(a.metrics)
	if i == cap(a.metrics) {
		// seriesBound was wrong: growing would move the samples their
		// families point to. Drop the sample rather than corrupt the rest.
		klog.ErrorS(nil, "cAdvisor metrics: more samples than reserved; sample dropped", "metric", cadvisorFamilies[fam].name)
		b.g.dropped++
		return
	}
	a.metrics = a.metrics[:i+1]
	a.values = a.values[:i+1]
	m := &a.metrics[i]
	a.values[i] = v
	m.Label = labels
	if cadvisorFamilies[fam].typ == counter {
		a.counters = a.counters[:i+1]
		a.counters[i].Value = &a.values[i]
		m.Counter = &a.counters[i]
	} else {
		a.gauges = a.gauges[:i+1]
		a.gauges[i].Value = &a.values[i]
		m.Gauge = &a.gauges[i]
	}
	if !ts.IsZero() {
		a.stamps = a.stamps[:i+1]
		a.stamps[i] = ts.UnixMilli()
		m.TimestampMs = &a.stamps[i]
	}
	a.byFamily[fam] = append(a.byFamily[fam], m)
}

// arena holds one scrape's samples. Its slices are sized before any
// sample is added (reserve), so the pointers into them stay valid; it
// goes back to the pool once the response is written.
type arena struct {
	metrics  []dto.Metric
	values   []float64
	stamps   []int64
	gauges   []dto.Gauge
	counters []dto.Counter
	byFamily [numFamilies][]*dto.Metric
	fams     [numFamilies]dto.MetricFamily
	out      []*dto.MetricFamily
}

func (a *arena) reserve(n int) {
	if cap(a.metrics) < n {
		n += n / 4
		a.metrics = make([]dto.Metric, 0, n)
		a.values = make([]float64, 0, n)
		a.stamps = make([]int64, 0, n)
		a.gauges = make([]dto.Gauge, 0, n)
		a.counters = make([]dto.Counter, 0, n)
	}
}

func (a *arena) families() []*dto.MetricFamily {
	a.out = a.out[:0]
	for i := range a.byFamily {
		if len(a.byFamily[i]) == 0 {
			continue
		}
		f := &cadvisorFamilies[i]
		a.fams[i] = dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &f.typ, Metric: a.byFamily[i]}
		a.out = append(a.out, &a.fams[i])
	}
	return a.out
}

func (a *arena) reset() {
	clear(a.metrics[:cap(a.metrics)])
	clear(a.gauges[:cap(a.gauges)])
	clear(a.counters[:cap(a.counters)])
	a.metrics, a.values, a.stamps = a.metrics[:0], a.values[:0], a.stamps[:0]
	a.gauges, a.counters = a.gauges[:0], a.counters[:0]
	for i := range a.byFamily {
		clear(a.byFamily[i])
		a.byFamily[i] = a.byFamily[i][:0]
	}
	a.fams = [numFamilies]dto.MetricFamily{}
}
