package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- BEGIN GENERATED: hack/bench.sh -->"
	endMarker   = "<!-- END GENERATED: hack/bench.sh -->"
)

type envInfo struct {
	date, cpu, kernel, mem, runtime, kubelet, nodelet, commit string
	cores                                                     int
}

func describeEnv(ctx context.Context, cfg config, cri *criClient) envInfo {
	e := envInfo{
		date:    time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		cores:   runtime.NumCPU(),
		runtime: cri.version(ctx),
		kubelet: binaryVersion(cfg.kubelet),
		nodelet: binaryVersion(cfg.nodelet),
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %d kB", &kib)
		e.mem = fmt.Sprintf("%.0f GiB", float64(kib)/(1<<20))
	}
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		e.commit = strings.TrimSpace(string(out))
	}
	return e
}

// metric is one table row: how to get the number from a result, whether it exists for the raw
// CRI leg (which has no agent process), and how to print it.
type metric struct {
	name   string
	noRaw  bool
	value  func(r *result) float64
	format func(v float64) string
}

func fmtDur(v float64) string { // v in seconds
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}
func fmtMiB(v float64) string { return fmt.Sprintf("%.1f MiB", v) }

func metrics(cfg config) []metric {
	idle := cfg.idle.Seconds()
	fmtCPU := func(v float64) string { return fmt.Sprintf("%.2f s (%.1f%% of a core)", v, 100*v/idle) }
	n := cfg.pods + cfg.burst
	return []metric{
		{name: "start → read-only /pods answers", noRaw: true,
			value: func(r *result) float64 { return r.startup.Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("pod start p50 (%d sequential)", cfg.pods),
			value: func(r *result) float64 { return percentile(r.seq, 50).Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("pod start p99 (%d sequential)", cfg.pods),
			value: func(r *result) float64 { return percentile(r.seq, 99).Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("%d pods at once → all running", cfg.burst),
			value: func(r *result) float64 { return r.burst.Seconds() }, format: fmtDur},
		{name: fmt.Sprintf("RSS after the burst (%d pods)", n), noRaw: true,
			value: func(r *result) float64 { return float64(r.rssKiB) / 1024 }, format: fmtMiB},
		{name: "of which anonymous (RssAnon: heap, stacks)", noRaw: true,
			value: func(r *result) float64 { return float64(r.anonKiB) / 1024 }, format: fmtMiB},
		{name: "peak RSS (VmHWM)", noRaw: true,
			value: func(r *result) float64 { return float64(r.hwmKiB) / 1024 }, format: fmtMiB},
		{name: fmt.Sprintf("CPU over %.0f s idle (%d pods)", cfg.idle.Seconds(), n), noRaw: true,
			value: func(r *result) float64 { return r.idleCPU }, format: fmtCPU},
		{name: "containerd CPU, same window",
			value: func(r *result) float64 { return r.runtimeIdleCPU }, format: fmtCPU},
		{name: "containerd RSS after the burst",
			value: func(r *result) float64 { return float64(r.runtimeRSSKiB) / 1024 }, format: fmtMiB},
	}
}

// render builds the generated markdown section: environment, table, per-leg notes.
func render(cfg config, env envInfo, results []*result) string {
	by := bySubject(results)
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s, mode %s, commit %s.\n\n", env.date, modeName(cfg.quick), orDash(env.commit))
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s RAM, kernel %s; runtime %s; upstream kubelet %s; nodelet %s.\n\n",
		orDash(env.cpu), env.cores, orDash(env.mem), orDash(env.kernel), orDash(env.runtime), orDash(env.kubelet), orDash(env.nodelet))
	b.WriteString("| metric | raw CRI | upstream kubelet | nodelet | nodelet / raw CRI | nodelet / upstream |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, m := range metrics(cfg) {
		cell := func(s string) string {
			r := by[s]
			if s == "raw" && m.noRaw {
				return "—"
			}
			if missing := r.outcomeOf().missing(); missing != "" {
				return missing
			}
			if (m.name == "containerd CPU, same window" || m.name == "containerd RSS after the burst") && cfg.runtimePID == 0 {
				return "—"
			}
			return m.format(m.value(r))
		}
		ratio := func(base string) string {
			if (base == "raw" && m.noRaw) || !by[base].outcomeOf().ok() || !by["nodelet"].outcomeOf().ok() {
				return "—"
			}
			d := m.value(by[base])
			if d == 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f×", m.value(by["nodelet"])/d)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", m.name, cell("raw"), cell("upstream"), cell("nodelet"), ratio("raw"), ratio("upstream"))
	}
	b.WriteString("\n")
	for _, s := range []string{"raw", "upstream", "nodelet"} {
		writeOutcomeNote(&b, s, by[s].outcomeOf(), func() string {
			return fmt.Sprintf("sequential latencies (ms, in order): %s", msList(by[s].seq))
		})
	}
	return strings.TrimRight(b.String(), "\n")
}

// outcome is what every leg's result has: which subject ran, and whether it
// produced figures.
type outcome struct {
	subject string
	// notAvailable says why the subject does not exist yet (no binary),
	// which is not a failure.
	notAvailable string
	// err says why the leg did not complete.
	err error
	// load is /proc/loadavg (1, 5, 15 min) when the leg started: other work
	// on the machine.
	load string
}

func (r *result) outcomeOf() *outcome {
	if r == nil {
		return nil
	}
	return &r.outcome
}

func (r *clusterResult) outcomeOf() *outcome {
	if r == nil {
		return nil
	}
	return &r.outcome
}

// ok reports a leg that ran and has figures.
func (l *outcome) ok() bool { return l != nil && l.err == nil && l.notAvailable == "" }

// missing is what a table cell shows for a leg without figures; "" when it
// has them.
func (l *outcome) missing() string {
	switch {
	case l == nil:
		return "not run"
	case l.notAvailable != "":
		return "n/a"
	case l.err != nil:
		return "failed"
	}
	return ""
}

// writeOutcomeNote writes the line under a table about one subject's leg:
// nothing if it did not run, why it has no figures, or detail() and the
// load it ran under.
func writeOutcomeNote(b *strings.Builder, subject string, l *outcome, detail func() string) {
	switch {
	case l == nil:
	case l.notAvailable != "":
		fmt.Fprintf(b, "- %s: %s\n", subject, l.notAvailable)
	case l.err != nil:
		fmt.Fprintf(b, "- %s: failed: %s\n", subject, oneLine(l.err.Error()))
	default:
		fmt.Fprintf(b, "- %s: %s; load average at leg start: %s\n", subject, detail(), orDash(l.load))
	}
}

func bySubject[R interface{ outcomeOf() *outcome }](results []R) map[string]R {
	by := map[string]R{}
	for _, r := range results {
		by[r.outcomeOf().subject] = r
	}
	return by
}

func modeName(quick bool) string {
	if quick {
		return "quick (smoke test, not comparable with full runs)"
	}
	return "full"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// updateDoc replaces the text between the markers in path with section. A missing file gets a
// bare header; a file without markers gets them appended.
func updateDoc(path, begin, end, section string) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		data = []byte("# Benchmarks\n\n")
	} else if err != nil {
		return err
	}
	out, err := replaceSectionBetween(string(data), begin, end, section)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

func replaceSection(doc, section string) (string, error) {
	return replaceSectionBetween(doc, beginMarker, endMarker, section)
}

func replaceSectionBetween(doc, beginMarker, endMarker, section string) (string, error) {
	block := beginMarker + "\n" + section + "\n" + endMarker
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	switch {
	case i < 0 && j < 0:
		return strings.TrimRight(doc, "\n") + "\n\n" + block + "\n", nil
	case i < 0 || j < i:
		return "", fmt.Errorf("generated-section markers are broken")
	}
	return doc[:i] + block + doc[j+len(endMarker):], nil
}
