package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

func modeName(quick bool) string {
	if quick {
		return "quick (smoke test, not comparable with full runs)"
	}
	return "full"
}

// runsNote says how many runs each figure comes from.
func runsNote(runs int) string {
	if runs <= 1 {
		return "one run"
	}
	return fmt.Sprintf("median of %d runs, their spread (min–max) in brackets", runs)
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

// resultsFile holds every section measured so far, outside the run's temp dir, rewritten after
// every leg: a leg that fails, or a run that is killed, loses nothing measured before.
type resultsFile struct {
	path     string
	header   string
	names    []string
	sections map[string]string
}

// newResultsFile names the run's file in dir; nil when dir is "".
func newResultsFile(dir string, env envInfo) (*resultsFile, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	return &resultsFile{
		path:     filepath.Join(dir, "bench-"+time.Now().Format("20060102-150405")+".md"),
		header:   fmt.Sprintf("# hack/bench results, %s, commit %s\n", env.date, orDash(env.commit)),
		sections: map[string]string{},
	}, nil
}

// put sets the section of mode name and rewrites the file; a write error is logged, not fatal:
// the tables are printed at the end of each mode as well.
func (f *resultsFile) put(name, section string) {
	if f == nil {
		return
	}
	if _, ok := f.sections[name]; !ok {
		f.names = append(f.names, name)
	}
	f.sections[name] = section
	var b strings.Builder
	b.WriteString(f.header)
	for _, n := range f.names {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", n, f.sections[n])
	}
	if err := os.WriteFile(f.path, []byte(b.String()), 0o644); err != nil {
		logf("WARNING: results file: %v", err)
	}
}
