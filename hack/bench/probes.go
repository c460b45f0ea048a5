package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	probeBeginMarker = "<!-- BEGIN GENERATED: hack/bench.sh probe load -->"
	probeEndMarker   = "<!-- END GENERATED: hack/bench.sh probe load -->"
	// probeBasePort: pod i serves its liveness endpoint on the host's port
	// probeBasePort+i (the pods use the host network, as every bench pod).
	probeBasePort = 20000
)

// probeResult is what one probe-load leg measured.
type probeResult struct {
	outcome
	// running: all pods written -> all running.
	running time.Duration
	// cpu and runtimeCPU over the window, in seconds.
	cpu, runtimeCPU float64
	rssKiB, anonKiB int64
	runtimeRSSKiB   int64
	// ready and restarts at the end of the window, per /pods.
	ready, restarts int
}

func (r *probeResult) outcomeOf() *outcome {
	if r == nil {
		return nil
	}
	return &r.outcome
}

// probeLoadPod runs an HTTP server and is probed every second: an exec
// readiness probe and an HTTP liveness probe against its server.
func probeLoadPod(id string, port int) *v1.Pod {
	p := benchPod(id)
	c := &p.Spec.Containers[0]
	c.Command = []string{"sh", "-c", fmt.Sprintf("mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p %d -h /www", port)}
	c.ReadinessProbe = &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	c.LivenessProbe = &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(port))}}}
	return p
}

// runProbeLeg starts subject, gives it cfg.probePods probed pods, and
// measures its CPU and memory over cfg.idle once they all run.
func runProbeLeg(ctx context.Context, cfg config, subject string) *probeResult {
	r := &probeResult{outcome: outcome{subject: subject, load: loadavg()}}
	dir := filepath.Join(cfg.stateDir, "probes-"+subject)
	a, err := newAgent(subject, dir, cfg.readOnlyPort)
	if err != nil {
		r.err = err
		return r
	}
	l := &agentLeg{a: a, argv: standaloneArgv(cfg, subject), poll: 100 * time.Millisecond, timeout: 60 * time.Second}
	defer l.stop()
	logf("probes %s: starting", subject)
	if _, err := l.start(ctx); err != nil {
		if strings.HasPrefix(err.Error(), "not available") {
			r.notAvailable = err.Error()
		} else {
			r.err = err
		}
		return r
	}
	ids := make([]string, cfg.probePods)
	t0 := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("probe-%03d", i)
		if err := a.writePod(ids[i], probeLoadPod(ids[i], probeBasePort+i)); err != nil {
			r.err = err
			return r
		}
	}
	if err := a.waitRunning(ctx, ids, l.poll, 4*l.timeout); err != nil {
		r.err = fmt.Errorf("%d probed pods: %w", len(ids), err)
		return r
	}
	r.running = time.Since(t0)
	logf("probes %s: %d pods running after %s; settle %s, then %s under probe load", subject, len(ids), r.running.Round(time.Millisecond), cfg.settle, cfg.idle)
	if err := sleep(ctx, cfg.settle); err != nil {
		r.err = err
		return r
	}
	cpu0, rcpu0 := cpuOf(l.pid()), cpuOf(cfg.runtimePID)
	if err := sleep(ctx, cfg.idle); err != nil {
		r.err = err
		return r
	}
	r.cpu, r.runtimeCPU = cpuOf(l.pid())-cpu0, cpuOf(cfg.runtimePID)-rcpu0
	if m, err := readProcMem(l.pid()); err == nil {
		r.rssKiB, r.anonKiB = m.rss, m.anon
	}
	if cfg.runtimePID > 0 {
		m, _ := readProcMem(cfg.runtimePID)
		r.runtimeRSSKiB = m.rss
	}
	r.ready, r.restarts, err = readiness(ctx, a)
	if err != nil {
		r.err = err
	}
	if !a.alive() {
		r.err = fmt.Errorf("%s exited during the probe load; see %s", subject, a.logFile)
	}
	logf("probes %s: done", subject)
	return r
}

// readiness counts, from /pods, the bench pods whose containers are all
// ready, and the restarts of all their containers.
func readiness(ctx context.Context, a *agent) (ready, restarts int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.readOnly+"/pods", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var pl struct {
		Items []struct {
			Status struct {
				ContainerStatuses []struct {
					Ready        bool  `json:"ready"`
					RestartCount int32 `json:"restartCount"`
				} `json:"containerStatuses"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pl); err != nil {
		return 0, 0, fmt.Errorf("GET /pods: %w", err)
	}
	for _, p := range pl.Items {
		all := len(p.Status.ContainerStatuses) > 0
		for _, cs := range p.Status.ContainerStatuses {
			all = all && cs.Ready
			restarts += int(cs.RestartCount)
		}
		if all {
			ready++
		}
	}
	return ready, restarts, nil
}

func probeTable(cfg config) table[*probeResult] {
	perMin := 60 / cfg.idle.Seconds()
	noRuntime := func(string) bool { return cfg.runtimePID == 0 }
	return table[*probeResult]{subjects: agentSubjects, bases: []string{"upstream"}, rows: []row[*probeResult]{
		{name: "all pods written → all running", format: fmtDur, value: func(r *probeResult) float64 { return r.running.Seconds() }},
		{name: "agent CPU per minute", format: fmtCPUMin, brief: fmtSec, value: func(r *probeResult) float64 { return r.cpu * perMin }},
		{name: "agent RSS", format: fmtMiB, value: func(r *probeResult) float64 { return float64(r.rssKiB) / 1024 }},
		{name: "of which anonymous", format: fmtMiB, value: func(r *probeResult) float64 { return float64(r.anonKiB) / 1024 }},
		{name: "containerd CPU per minute (runs the exec probes)", format: fmtCPUMin, brief: fmtSec, absent: noRuntime,
			value: func(r *probeResult) float64 { return r.runtimeCPU * perMin }},
		{name: "pods ready at the end", format: fmtCount, value: func(r *probeResult) float64 { return float64(r.ready) }},
		{name: "container restarts", format: fmtCount, value: func(r *probeResult) float64 { return float64(r.restarts) }},
	}}
}

func renderProbes(cfg config, env envInfo, runs map[string][]*probeResult) string {
	intro := agentsRunLine(cfg, env) + fmt.Sprintf("%d host-network pods, each with an exec readiness probe and an HTTP liveness probe every second; figures over %.0f s once all run.\n\n",
		cfg.probePods, cfg.idle.Seconds())
	return probeTable(cfg).section(intro, runs, func(*probeResult) string { return "probe load" })
}

func fmtCPUMin(v float64) string { return fmt.Sprintf("%.2f s (%.1f%% of a core)", v, 100*v/60) }
func fmtCount(v float64) string  { return fmt.Sprintf("%.0f", v) }
