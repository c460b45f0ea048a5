package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Standalone mode: raw CRI calls, the upstream kubelet and nodelet on a manifest dir; sequential
// pods, a burst, then the idle node with pods+burst pods and again with manyPods.

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
	// many: the idle window with cfg.manyPods pods (zero when that window did not run).
	many idleFigures
	// scraped: a window as long, right after it, with a Prometheus-style scrape of /metrics
	// and /metrics/cadvisor every cfg.scrapeEvery (zero when it did not run).
	scraped idleFigures
	// scrapes counts the scrapes made in that window; scrapeBytes their bodies' total size.
	scrapes, scrapeBytes int
}

// idleFigures is an idle window: CPU seconds over it, memory at its end.
type idleFigures struct {
	cpu, runtimeCPU float64
	rssKiB, anonKiB int64
}

func (r *result) outcomeOf() *outcome {
	if r == nil {
		return nil
	}
	return &r.outcome
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
	r.burst, err = l.burst(ctx, podIDs("burst-%02d", cfg.burst))
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

	n := cfg.pods + cfg.burst
	idle, err := idleWindow(ctx, cfg, l, subject, n)
	if err != nil {
		r.err = err
		return r
	}
	r.idleCPU, r.runtimeIdleCPU = idle.cpu, idle.runtimeCPU

	if extra := cfg.manyPods - n; extra > 0 {
		logf("%s: %d more pods, up to %d", subject, extra, cfg.manyPods)
		if _, err := l.burst(ctx, podIDs("many-%03d", extra)); err != nil {
			r.err = fmt.Errorf("%d more pods, up to %d: %w", extra, cfg.manyPods, err)
			return r
		}
		if r.many, err = idleWindow(ctx, cfg, l, subject, cfg.manyPods); err != nil {
			r.err = fmt.Errorf("idle with %d pods: %w", cfg.manyPods, err)
			return r
		}
		if a, ok := l.(*agentLeg); ok && cfg.scrapeEvery > 0 {
			if r.scraped, r.scrapes, r.scrapeBytes, err = scrapeWindow(ctx, cfg, a.a, cfg.manyPods); err != nil {
				r.err = fmt.Errorf("scrapes with %d pods: %w", cfg.manyPods, err)
				return r
			}
		}
	}
	if a, ok := l.(*agentLeg); ok && !a.a.alive() {
		r.err = fmt.Errorf("%s exited during the idle window; see %s", subject, a.a.logFile)
	}
	logf("%s: done", subject)
	return r
}

// idleWindow waits cfg.settle, then measures the subject's and the runtime's CPU over cfg.idle
// and their memory at its end.
func idleWindow(ctx context.Context, cfg config, l leg, subject string, pods int) (idleFigures, error) {
	var f idleFigures
	logf("%s: settle %s, then idle %s with %d pods", subject, cfg.settle, cfg.idle, pods)
	if err := sleep(ctx, cfg.settle); err != nil {
		return f, err
	}
	cpu0, rcpu0 := cpuOf(l.pid()), cpuOf(cfg.runtimePID)
	if err := sleep(ctx, cfg.idle); err != nil {
		return f, err
	}
	if l.pid() > 0 {
		f.cpu = cpuOf(l.pid()) - cpu0
		if m, err := readProcMem(l.pid()); err == nil {
			f.rssKiB, f.anonKiB = m.rss, m.anon
		}
	}
	if cfg.runtimePID > 0 {
		f.runtimeCPU = cpuOf(cfg.runtimePID) - rcpu0
	}
	return f, nil
}

// scrapePaths are what a Prometheus set up as the kubernetes-mixin expects scrapes from a
// kubelet; both agents serve them on the read-only port.
var scrapePaths = []string{"/metrics", "/metrics/cadvisor"}

// scrapeWindow measures the agent's and the runtime's CPU over cfg.idle while it is scraped
// every cfg.scrapeEvery, as a Prometheus server would, and its memory at the end.
func scrapeWindow(ctx context.Context, cfg config, a *agent, pods int) (f idleFigures, scrapes, bytes int, err error) {
	logf("%s: idle %s with %d pods, scraped every %s", a.name, cfg.idle, pods, cfg.scrapeEvery)
	pid := a.pid()
	cpu0, rcpu0 := cpuOf(pid), cpuOf(cfg.runtimePID)
	end := time.Now().Add(cfg.idle)
	for time.Now().Before(end) {
		for _, p := range scrapePaths {
			n, err := a.scrape(ctx, p)
			if err != nil {
				return f, scrapes, bytes, err
			}
			scrapes, bytes = scrapes+1, bytes+n
		}
		if err := sleep(ctx, min(cfg.scrapeEvery, time.Until(end))); err != nil {
			return f, scrapes, bytes, err
		}
	}
	f.cpu = cpuOf(pid) - cpu0
	if m, err := readProcMem(pid); err == nil {
		f.rssKiB, f.anonKiB = m.rss, m.anon
	}
	if cfg.runtimePID > 0 {
		f.runtimeCPU = cpuOf(cfg.runtimePID) - rcpu0
	}
	return f, scrapes, bytes, nil
}

func podIDs(format string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf(format, i)
	}
	return ids
}

// standaloneArgv is how an agent subject runs on a manifest dir.
func standaloneArgv(cfg config, subject string) func(a *agent) ([]string, error) {
	if subject == "nodelet" {
		return nodeletArgv(cfg.nodelet, cfg.endpoint, cfg.nodeName, cfg.readOnlyPort)
	}
	return upstreamArgv(cfg.kubelet, cfg.endpoint, cfg.nodeName, cfg.readOnlyPort)
}

func fmtDur(v float64) string { // v in seconds
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}
func fmtMiB(v float64) string { return fmt.Sprintf("%.1f MiB", v) }
func fmtSec(v float64) string { return fmt.Sprintf("%.2f s", v) }

func standaloneTable(cfg config) table[*result] {
	idle := cfg.idle.Seconds()
	fmtCPU := func(v float64) string { return fmt.Sprintf("%.2f s (%.1f%% of a core)", v, 100*v/idle) }
	noRaw := func(s string) bool { return s == "raw" }
	noRuntime := func(string) bool { return cfg.runtimePID == 0 }
	n := cfg.pods + cfg.burst
	rows := []row[*result]{
		{name: "start → read-only /pods answers", absent: noRaw,
			value: func(r *result) float64 { return r.startup.Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("pod start p50 (%d sequential)", cfg.pods), hist: histStartP50, histBase: "raw",
			value: func(r *result) float64 { return percentile(r.seq, 50).Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("pod start p99 (%d sequential)", cfg.pods),
			value: func(r *result) float64 { return percentile(r.seq, 99).Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("%d pods at once → all running", cfg.burst), hist: histBurst, histBase: "raw",
			value: func(r *result) float64 { return r.burst.Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("RSS after the burst (%d pods)", n), absent: noRaw, hist: histRSS,
			value: func(r *result) float64 { return float64(r.rssKiB) / 1024 }, format: fmtMiB},
		{name: "of which anonymous (RssAnon: heap, stacks)", absent: noRaw,
			value: func(r *result) float64 { return float64(r.anonKiB) / 1024 }, format: fmtMiB},
		{name: "peak RSS (VmHWM)", absent: noRaw,
			value: func(r *result) float64 { return float64(r.hwmKiB) / 1024 }, format: fmtMiB},
		{name: fmt.Sprintf("CPU over %.0f s idle (%d pods)", idle, n), absent: noRaw, hist: histIdle, histScale: 60 / idle,
			value: func(r *result) float64 { return r.idleCPU }, format: fmtCPU, brief: fmtSec},
		{name: "containerd CPU, same window", absent: noRuntime,
			value: func(r *result) float64 { return r.runtimeIdleCPU }, format: fmtCPU, brief: fmtSec},
		{name: "containerd RSS after the burst", absent: noRuntime,
			value: func(r *result) float64 { return float64(r.runtimeRSSKiB) / 1024 }, format: fmtMiB},
	}
	if cfg.manyPods > n {
		m := cfg.manyPods
		rows = append(rows,
			row[*result]{name: fmt.Sprintf("CPU over %.0f s idle (%d pods)", idle, m), absent: noRaw, hist: histIdleMany, histScale: 60 / idle,
				value: func(r *result) float64 { return r.many.cpu }, format: fmtCPU, brief: fmtSec},
			row[*result]{name: fmt.Sprintf("RSS at the end of that window (%d pods)", m), absent: noRaw, hist: histRSSMany,
				value: func(r *result) float64 { return float64(r.many.rssKiB) / 1024 }, format: fmtMiB},
			row[*result]{name: "of which anonymous", absent: noRaw,
				value: func(r *result) float64 { return float64(r.many.anonKiB) / 1024 }, format: fmtMiB},
			row[*result]{name: fmt.Sprintf("containerd CPU, same window (%d pods)", m), absent: noRuntime,
				value: func(r *result) float64 { return r.many.runtimeCPU }, format: fmtCPU, brief: fmtSec},
		)
		if every := cfg.scrapeEvery; every > 0 {
			rows = append(rows,
				row[*result]{name: fmt.Sprintf("CPU over %.0f s, /metrics and /metrics/cadvisor scraped every %s (%d pods)", idle, every, m), absent: noRaw,
					value: func(r *result) float64 { return r.scraped.cpu }, format: fmtCPU, brief: fmtSec},
				row[*result]{name: "of which the scrapes (that window less the idle one)", absent: noRaw,
					value: func(r *result) float64 { return r.scraped.cpu - r.many.cpu }, format: fmtSec},
				row[*result]{name: "bytes per scrape of both", absent: noRaw,
					value: func(r *result) float64 {
						if r.scrapes == 0 {
							return 0
						}
						return float64(r.scrapeBytes) / float64(r.scrapes/len(scrapePaths))
					}, format: func(v float64) string { return fmt.Sprintf("%.0f KiB", v/1024) }},
			)
		}
	}
	return table[*result]{subjects: []string{"raw", "upstream", "nodelet"}, bases: []string{"raw", "upstream"}, rows: rows}
}

// render builds the generated markdown section: environment, table, per-leg notes.
func render(cfg config, env envInfo, runs map[string][]*result) string {
	intro := fmt.Sprintf("Run %s, mode %s, commit %s; %s.\n\n", env.date, modeName(cfg.quick), orDash(env.commit), runsNote(cfg.runs)) +
		fmt.Sprintf("Machine: %s, %d cores, %s RAM, kernel %s; runtime %s; upstream kubelet %s; nodelet %s.\n\n",
			orDash(env.cpu), env.cores, orDash(env.mem), orDash(env.kernel), orDash(env.runtime), orDash(env.kubelet), orDash(env.nodelet))
	return standaloneTable(cfg).section(intro, runs, func(r *result) string {
		return fmt.Sprintf("sequential latencies (ms, in order): %s", msList(r.seq))
	})
}
