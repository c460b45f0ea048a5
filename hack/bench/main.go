// Command bench measures pod start latency, burst throughput, memory and idle CPU of three
// subjects against one containerd: raw CRI calls (the floor), the upstream kubelet and nodelet.
// hack/bench.sh sets up the runtime and builds the binaries; run that, not this, by hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	upstreamHostDir = "/var/lib/kubelet"
	busyboxImage    = "docker.io/library/busybox:1.35"
	pauseImage      = "registry.k8s.io/pause:3.10"
)

type config struct {
	endpoint     string
	runtimePID   int
	stateDir     string
	subjects     []string
	kubelet      string
	nodelet      string
	readOnlyPort int
	nodeName     string
	pods         int
	burst        int
	idle         time.Duration
	settle       time.Duration
	poll         time.Duration
	quick        bool
	doc          string
	// modes: "standalone" (raw CRI / upstream / nodelet on manifests) and/or "cluster" (each
	// agent joins its own test cluster).
	standalone      bool
	cluster         bool
	clusterSubjects []string
	clusterUp       string
	deletes         int
	// probes: the probe-load legs (upstream and nodelet with probePods
	// probed pods each).
	probes    bool
	probePods int
	// configVols: the config-volume legs (issue 11) with configPods pods.
	configVols bool
	configPods int
}

// result is what one standalone leg measured.
type result struct {
	outcome
	startup        time.Duration
	seq            []time.Duration
	burst          time.Duration
	rssKiB         int64
	hwmKiB         int64
	anonKiB        int64
	idleCPU        float64
	runtimeIdleCPU float64
	runtimeRSSKiB  int64
}

func main() {
	var cfg config
	var subjects, modes, clusterSubjects string
	flag.StringVar(&cfg.endpoint, "runtime-endpoint", "", "CRI endpoint of the containerd to use (unix:///path/containerd.sock); required")
	flag.IntVar(&cfg.runtimePID, "runtime-pid", 0, "pid of that containerd, to report its CPU and memory (optional)")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "where subjects get their root and manifest dirs (default: a temp dir, removed)")
	flag.StringVar(&subjects, "subjects", "raw,upstream,nodelet", "legs to run, in order")
	flag.StringVar(&cfg.kubelet, "kubelet", "_output/tools/bin/kubelet", "upstream kubelet binary")
	flag.StringVar(&cfg.nodelet, "nodelet", "_output/bin/nodelet", "nodelet binary")
	flag.IntVar(&cfg.readOnlyPort, "read-only-port", 10255, "read-only port the agents serve /pods on")
	flag.StringVar(&cfg.nodeName, "node-name", "bench-node", "node name given to the agents")
	flag.StringVar(&modes, "modes", "standalone,cluster,probes,config", "standalone (agents on a manifest dir), cluster (agents in their own test cluster), probes (agents under a probe load), config (API pods with a ConfigMap and a Secret volume, each agent in its own cluster), in that order")
	flag.IntVar(&cfg.configPods, "config-pods", 100, "config mode: pods mounting the ConfigMap and the Secret")
	flag.IntVar(&cfg.probePods, "probe-pods", 100, "probes mode: pods with an exec readiness and an HTTP liveness probe every second")
	flag.BoolVar(&cfg.cluster, "cluster", false, "cluster legs only (same as -modes cluster)")
	flag.StringVar(&clusterSubjects, "cluster-subjects", "upstream,nodelet", "agents to run in cluster mode, in order")
	flag.StringVar(&cfg.clusterUp, "cluster-up", "hack/cluster-up.sh", "cluster-up script (cluster-down.sh is next to it)")
	flag.IntVar(&cfg.deletes, "deletes", 3, "cluster mode: pods deleted through the API (median reported)")
	flag.IntVar(&cfg.pods, "pods", 20, "sequential pods (latency percentiles)")
	flag.IntVar(&cfg.burst, "burst", 50, "pods written at once")
	flag.DurationVar(&cfg.idle, "idle", 60*time.Second, "idle window for the CPU measurement")
	flag.DurationVar(&cfg.settle, "settle", 5*time.Second, "wait after the burst before the idle window")
	flag.DurationVar(&cfg.poll, "poll", 10*time.Millisecond, "/pods poll interval")
	flag.BoolVar(&cfg.quick, "quick", false, "smoke test: 5 pods, burst of 10, 10 s idle; does not write the doc unless -doc is given")
	flag.StringVar(&cfg.doc, "doc", "docs/BENCHMARKS.md", "markdown file whose generated section is replaced (\"\" = stdout only)")
	flag.Parse()

	if cfg.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["pods"] {
			cfg.pods = 5
		}
		if !set["burst"] {
			cfg.burst = 10
		}
		if !set["idle"] {
			cfg.idle = 10 * time.Second
		}
		if !set["settle"] {
			cfg.settle = 2 * time.Second
		}
		if !set["doc"] {
			cfg.doc = ""
		}
		if !set["deletes"] {
			cfg.deletes = 1
		}
		if !set["probe-pods"] {
			cfg.probePods = 10
		}
		if !set["config-pods"] {
			cfg.configPods = 5
		}
	}
	if cfg.cluster {
		modes = "cluster"
	}
	for _, m := range strings.Split(modes, ",") {
		switch strings.TrimSpace(m) {
		case "standalone":
			cfg.standalone = true
		case "cluster":
			cfg.cluster = true
		case "probes":
			cfg.probes = true
		case "config":
			cfg.configVols = true
		case "":
		default:
			fmt.Fprintf(os.Stderr, "bench: unknown mode %q (standalone, cluster, probes, config)\n", m)
			os.Exit(2)
		}
	}
	for _, s := range strings.Split(clusterSubjects, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.clusterSubjects = append(cfg.clusterSubjects, s)
		}
	}
	if cfg.endpoint == "" {
		fmt.Fprintln(os.Stderr, "bench: -runtime-endpoint is required (hack/bench.sh provides it)")
		os.Exit(2)
	}
	for _, s := range strings.Split(subjects, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.subjects = append(cfg.subjects, s)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, cfg config) (int, error) {
	if cfg.stateDir == "" {
		dir, err := os.MkdirTemp("", "nodelet-bench-")
		if err != nil {
			return 1, err
		}
		defer os.RemoveAll(dir)
		cfg.stateDir = dir
	}
	cri, err := dialCRI(ctx, cfg.endpoint)
	if err != nil {
		return 1, err
	}
	defer cri.conn.Close()
	if err := cri.requireImages(ctx, busyboxImage, pauseImage); err != nil {
		return 1, err
	}
	if err := cri.clean(ctx); err != nil {
		return 1, err
	}

	env := describeEnv(ctx, cfg, cri)
	failed := false
	modes := []struct {
		on  bool
		run func() (bool, error)
	}{
		{cfg.standalone, func() (bool, error) {
			return runMode(ctx, cfg, cri, "", cfg.subjects, func(s string) *result { return runLeg(ctx, cfg, cri, s) },
				func(rs []*result) string { return render(cfg, env, rs) }, beginMarker, endMarker)
		}},
		{cfg.cluster, func() (bool, error) {
			return runMode(ctx, cfg, cri, "cluster ", cfg.clusterSubjects, func(s string) *clusterResult { return runClusterLeg(ctx, cfg, s) },
				func(rs []*clusterResult) string { return renderCluster(cfg, env, rs) }, clusterBeginMarker, clusterEndMarker)
		}},
		{cfg.probes, func() (bool, error) {
			return runMode(ctx, cfg, cri, "probes ", cfg.clusterSubjects, func(s string) *probeResult { return runProbeLeg(ctx, cfg, s) },
				func(rs []*probeResult) string { return renderProbes(cfg, env, rs) }, probeBeginMarker, probeEndMarker)
		}},
		{cfg.configVols, func() (bool, error) {
			return runMode(ctx, cfg, cri, "config ", cfg.clusterSubjects, func(s string) *configResult { return runConfigLeg(ctx, cfg, s) },
				func(rs []*configResult) string { return renderConfig(cfg, env, rs) }, configBeginMarker, configEndMarker)
		}},
	}
	for _, m := range modes {
		if !m.on {
			continue
		}
		legFailed, err := m.run()
		if err != nil {
			return 1, err
		}
		failed = failed || legFailed
	}
	if failed {
		return 1, errors.New("a leg failed")
	}
	return 0, nil
}

// runMode runs one leg per subject, each on an emptied runtime, prints the
// mode's section and writes it to the doc unless a leg failed (failed).
func runMode[R interface{ outcomeOf() *outcome }](ctx context.Context, cfg config, cri *criClient, label string, subjects []string,
	leg func(subject string) R, render func([]R) string, begin, end string) (failed bool, err error) {
	var results []R
	for _, s := range subjects {
		r := leg(s)
		results = append(results, r)
		if o := r.outcomeOf(); o.err != nil {
			failed = true
			logf("%s%s: FAILED: %v", label, s, o.err)
		}
		if err := cri.clean(context.WithoutCancel(ctx)); err != nil {
			return failed, err
		}
		removeBenchLogs()
		if ctx.Err() != nil {
			return failed, ctx.Err()
		}
	}
	section := render(results)
	fmt.Println(section)
	return failed, maybeUpdate(cfg, failed, begin, end, section)
}

// maybeUpdate writes section between the markers of cfg.doc unless a leg failed or there is no doc.
func maybeUpdate(cfg config, failed bool, begin, end, section string) error {
	if cfg.doc == "" {
		return nil
	}
	if failed {
		logf("not updating %s (%s): a leg failed", cfg.doc, begin)
		return nil
	}
	if err := updateDoc(cfg.doc, begin, end, section); err != nil {
		return err
	}
	logf("updated %s (%s)", cfg.doc, begin)
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func runLeg(ctx context.Context, cfg config, cri *criClient, subject string) *result {
	r := &result{outcome: outcome{subject: subject, load: loadavg()}}
	dir := filepath.Join(cfg.stateDir, subject)
	var l leg
	switch subject {
	case "raw":
		l = &rawLeg{cri: cri, logDir: filepath.Join(dir, "logs")}
	case "upstream", "nodelet":
		a, err := newAgent(subject, dir, cfg.readOnlyPort)
		if err != nil {
			r.err = err
			return r
		}
		l = &agentLeg{a: a, argv: standaloneArgv(cfg, subject), poll: cfg.poll, timeout: 60 * time.Second}
	default:
		r.err = fmt.Errorf("unknown subject %q (raw, upstream, nodelet)", subject)
		return r
	}
	if subject == "upstream" {
		// The kubelet creates /var/lib/kubelet/device-plugins whatever its --root-dir; remove it
		// afterwards unless it was there before.
		if _, err := os.Stat(upstreamHostDir); os.IsNotExist(err) {
			defer os.RemoveAll(upstreamHostDir)
		}
	}
	defer l.stop() // runs before the removal above

	logf("%s: starting", subject)
	d, err := l.start(ctx)
	if err != nil {
		if strings.HasPrefix(err.Error(), "not available") {
			r.notAvailable = err.Error()
			logf("%s: %v", subject, err)
		} else {
			r.err = err
		}
		return r
	}
	r.startup = d

	logf("%s: %d sequential pods", subject, cfg.pods)
	for i := 0; i < cfg.pods; i++ {
		d, err := l.one(ctx, fmt.Sprintf("seq-%02d", i))
		if err != nil {
			r.err = fmt.Errorf("sequential pod %d: %w", i, err)
			return r
		}
		r.seq = append(r.seq, d)
	}

	logf("%s: burst of %d pods", subject, cfg.burst)
	ids := make([]string, cfg.burst)
	for i := range ids {
		ids[i] = fmt.Sprintf("burst-%02d", i)
	}
	r.burst, err = l.burst(ctx, ids)
	if err != nil {
		r.err = fmt.Errorf("burst: %w", err)
		return r
	}
	if pid := l.pid(); pid > 0 {
		m, err := readProcMem(pid)
		if err != nil {
			r.err = err
			return r
		}
		r.rssKiB, r.hwmKiB, r.anonKiB = m.rss, m.hwm, m.anon
	}
	if cfg.runtimePID > 0 {
		m, _ := readProcMem(cfg.runtimePID)
		r.runtimeRSSKiB = m.rss
	}

	logf("%s: settle %s, then idle %s with %d pods", subject, cfg.settle, cfg.idle, cfg.pods+cfg.burst)
	if err := sleep(ctx, cfg.settle); err != nil {
		r.err = err
		return r
	}
	cpu0, rcpu0 := cpuOf(l.pid()), cpuOf(cfg.runtimePID)
	if err := sleep(ctx, cfg.idle); err != nil {
		r.err = err
		return r
	}
	if l.pid() > 0 {
		r.idleCPU = cpuOf(l.pid()) - cpu0
	}
	if cfg.runtimePID > 0 {
		r.runtimeIdleCPU = cpuOf(cfg.runtimePID) - rcpu0
	}
	if a, ok := l.(*agentLeg); ok && !a.a.alive() {
		r.err = fmt.Errorf("%s exited during the idle window; see %s", subject, a.a.logFile)
	}
	logf("%s: done", subject)
	return r
}

// standaloneArgv is how an agent subject runs on a manifest dir.
func standaloneArgv(cfg config, subject string) func(a *agent) ([]string, error) {
	if subject == "nodelet" {
		return nodeletArgv(cfg.nodelet, cfg.endpoint, cfg.nodeName, cfg.readOnlyPort)
	}
	return upstreamArgv(cfg.kubelet, cfg.endpoint, cfg.nodeName, cfg.readOnlyPort)
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func cpuOf(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	s, _ := procCPU(pid)
	return s
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// percentile is the nearest-rank percentile (p in 0..100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s)) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}
