// Command bench measures pod start latency, burst throughput, memory and idle CPU of three
// subjects against one containerd: raw CRI calls (the floor), the upstream kubelet and nodelet.
// hack/bench.sh sets up the runtime and builds the binaries; run that, not this, by hand.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
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
	// runs: every leg runs this many times (interleaved: run 1 of every subject, then run 2, ...);
	// the tables give the median and the spread.
	runs int
	// manyPods: the standalone legs top the node up to this many pods for a second idle window
	// (0, or not more than pods+burst: no second window).
	manyPods int
	// scrapeEvery: after the manyPods idle window, another as long with the agent's metrics
	// scraped this often (0: none).
	scrapeEvery time.Duration
	// out: directory of the results file, rewritten after every leg ("": none).
	out string
	// buildTools builds the upstream kubelet when a leg needs it ("": never).
	buildTools string
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
	flag.IntVar(&cfg.runs, "runs", 1, "runs of every leg; the tables give the median and the spread (min-max)")
	flag.IntVar(&cfg.manyPods, "many-pods", 110, "standalone mode: pods on the node for the second idle window (0: none)")
	flag.DurationVar(&cfg.scrapeEvery, "scrape-every", 10*time.Second, "standalone mode: after the second idle window, another with /metrics and /metrics/cadvisor scraped this often (0: none)")
	flag.StringVar(&cfg.out, "out", "_output/bench", "directory for the results file, rewritten after every leg (\"\" = none)")
	flag.StringVar(&cfg.buildTools, "build-tools", "", "hack/build-tools.sh, run to build the upstream kubelet when a leg needs it (\"\" = never)")
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
		if !set["many-pods"] {
			cfg.manyPods = 20
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
	if cfg.runs < 1 {
		fmt.Fprintln(os.Stderr, "bench: -runs must be at least 1")
		os.Exit(2)
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
	buildUpstream(ctx, cfg)

	env := describeEnv(ctx, cfg, cri)
	results, err := newResultsFile(cfg.out, env)
	if err != nil {
		return 1, err
	}
	b := &bench{cfg: cfg, cri: cri, results: results, history: map[string]string{}}
	steps := []struct {
		on  bool
		run func() error
	}{
		{cfg.standalone, func() error {
			return runMode(ctx, b, mode[*result]{name: "standalone", subjects: cfg.subjects,
				leg:    func(c config, s string) *result { return runLeg(ctx, c, cri, s) },
				failed: func(o outcome) *result { return &result{outcome: o} },
				render: func(runs map[string][]*result) string { return render(cfg, env, runs) },
				begin:  beginMarker, end: endMarker, history: standaloneTable(cfg).history})
		}},
		{cfg.cluster, func() error {
			return runMode(ctx, b, mode[*clusterResult]{name: "cluster", subjects: cfg.clusterSubjects,
				leg:    func(c config, s string) *clusterResult { return runClusterLeg(ctx, c, s) },
				failed: func(o outcome) *clusterResult { return &clusterResult{outcome: o} },
				render: func(runs map[string][]*clusterResult) string { return renderCluster(cfg, env, runs) },
				begin:  clusterBeginMarker, end: clusterEndMarker, history: clusterTable(cfg).history})
		}},
		{cfg.probes, func() error {
			return runMode(ctx, b, mode[*probeResult]{name: "probes", subjects: cfg.clusterSubjects,
				leg:    func(c config, s string) *probeResult { return runProbeLeg(ctx, c, s) },
				failed: func(o outcome) *probeResult { return &probeResult{outcome: o} },
				render: func(runs map[string][]*probeResult) string { return renderProbes(cfg, env, runs) },
				begin:  probeBeginMarker, end: probeEndMarker})
		}},
		{cfg.configVols, func() error {
			return runMode(ctx, b, mode[*configResult]{name: "config", subjects: cfg.clusterSubjects,
				leg:    func(c config, s string) *configResult { return runConfigLeg(ctx, c, s) },
				failed: func(o outcome) *configResult { return &configResult{outcome: o} },
				render: func(runs map[string][]*configResult) string { return renderConfig(cfg, env, runs) },
				begin:  configBeginMarker, end: configEndMarker})
		}},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		if err := s.run(); err != nil {
			b.failures = append(b.failures, err.Error())
			break // interrupted
		}
	}
	if err := cri.clean(context.WithoutCancel(ctx)); err != nil {
		logf("WARNING: runtime clean-up after the last leg: %v", err)
	}
	removeBenchLogs()
	if cfg.doc != "" && !cfg.quick && len(b.history) > 0 {
		if err := updateHistory(cfg.doc, env, cfg.runs, b.history); err != nil {
			b.failures = append(b.failures, fmt.Sprintf("history: %v", err))
		} else {
			logf("appended this run to the history in %s", cfg.doc)
		}
	}
	if results != nil {
		logf("results of every leg: %s", results.path)
	}
	if len(b.failures) > 0 {
		return 1, fmt.Errorf("%d failed:\n  %s", len(b.failures), strings.Join(b.failures, "\n  "))
	}
	return 0, nil
}

// bench is one run of the benchmark: where its results go and what failed so far.
type bench struct {
	cfg     config
	cri     *criClient
	results *resultsFile
	// failures: one line per failed leg, "mode subject (run i): why".
	failures []string
	// history: the columns of the history row the modes written into the doc filled.
	history map[string]string
}

// mode is one kind of leg and its section of the doc.
type mode[R outcomer] struct {
	name     string
	subjects []string
	// leg runs one leg with cfg, whose stateDir is the run's own.
	leg func(cfg config, subject string) R
	// failed is the result of a leg that could not start.
	failed     func(o outcome) R
	render     func(runs map[string][]R) string
	begin, end string
	// history fills the history columns the mode feeds; nil: none.
	history func(runs map[string][]R, h map[string]string)
}

// runMode runs cfg.runs rounds of one leg per subject, each on an emptied runtime. A leg that
// fails is reported and the next one runs; the results file gets the mode's section after every
// leg. At the end it prints the section and writes it into the doc unless a leg failed. Only an
// interruption ends it early (the error).
func runMode[R outcomer](ctx context.Context, b *bench, m mode[R]) error {
	runs := map[string][]R{}
	failed := false
	for i := 1; i <= b.cfg.runs; i++ {
		for _, s := range m.subjects {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: interrupted: %w", m.name, err)
			}
			label := m.name + " " + s
			if b.cfg.runs > 1 {
				label += fmt.Sprintf(" (run %d of %d)", i, b.cfg.runs)
			}
			logf("leg %s", label)
			var r R
			if err := b.cri.clean(ctx); err != nil {
				r = m.failed(outcome{subject: s, load: loadavg(), err: fmt.Errorf("runtime clean-up before the leg: %w", err)})
			} else {
				removeBenchLogs()
				c := b.cfg
				if b.cfg.runs > 1 { // each run's agents start on empty manifest and root dirs
					c.stateDir = filepath.Join(c.stateDir, fmt.Sprintf("run%d", i))
				}
				r = m.leg(c, s)
			}
			runs[s] = append(runs[s], r)
			if o := r.outcomeOf(); o.err != nil {
				failed = true
				b.failures = append(b.failures, fmt.Sprintf("%s: %s", label, oneLine(o.err.Error())))
				logf("leg %s FAILED: %v", label, o.err)
			}
			b.results.put(m.name, m.render(runs))
		}
	}
	section := m.render(runs)
	fmt.Println(section)
	if b.cfg.doc == "" {
		return nil
	}
	if failed {
		logf("not updating %s (%s section): a leg failed; its figures are in the results file", b.cfg.doc, m.name)
		return nil
	}
	if err := updateDoc(b.cfg.doc, m.begin, m.end, section); err != nil {
		b.failures = append(b.failures, fmt.Sprintf("%s: writing %s: %v", m.name, b.cfg.doc, err))
		return nil
	}
	logf("updated %s (%s section)", b.cfg.doc, m.name)
	if m.history != nil {
		m.history(runs, b.history)
	}
	return nil
}

// buildUpstream builds the upstream kubelet when a leg runs it (instant when up to date); a
// failed build leaves those legs "not available".
func buildUpstream(ctx context.Context, cfg config) {
	needs := (cfg.standalone && slices.Contains(cfg.subjects, "upstream")) ||
		((cfg.cluster || cfg.probes || cfg.configVols) && slices.Contains(cfg.clusterSubjects, "upstream"))
	if !needs || cfg.buildTools == "" {
		return
	}
	logf("building the upstream kubelet (instant when up to date)")
	cmd := exec.CommandContext(ctx, "bash", cfg.buildTools, filepath.Dir(cfg.kubelet))
	cmd.Env = append(os.Environ(), "TOOLS=kubelet")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		logf("WARNING: building the upstream kubelet: %v; its legs report 'not available'", err)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
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
