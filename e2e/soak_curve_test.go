//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/e2e/framework"
)

// The soak's curves: nodelet's RSS, goroutines and open files sampled
// through the run, written as a CSV under _output/soak/ with a compact
// summary beside it (and in the test log), so that a slow leak shows as a
// slope and not only as an end figure.

// soakSample is one point of the curves.
type soakSample struct {
	at             time.Duration // since the first pod
	created, alive int
	procFigures
}

// soakCurve collects samples, at most one per interval.
type soakCurve struct {
	every   time.Duration
	last    time.Time
	samples []soakSample
	written bool
}

// maybe samples when the interval has passed since the last sample.
func (c *soakCurve) maybe(t *testing.T, n *framework.Nodelet, start time.Time, created, alive int) {
	if time.Since(c.last) < c.every {
		return
	}
	c.add(t, n, start, created, alive)
}

// add samples now.
func (c *soakCurve) add(t *testing.T, n *framework.Nodelet, start time.Time, created, alive int) {
	t.Helper()
	c.last = time.Now()
	c.samples = append(c.samples, soakSample{at: time.Since(start), created: created, alive: alive, procFigures: readProcFigures(t, n)})
}

// csv renders every sample.
func (c *soakCurve) csv() string {
	var b strings.Builder
	b.WriteString("seconds,created,alive,goroutines,fds,rss_kib\n")
	for _, s := range c.samples {
		fmt.Fprintf(&b, "%.0f,%d,%d,%d,%d,%d\n", s.at.Seconds(), s.created, s.alive, s.goroutines, s.fds, s.rssKiB)
	}
	return b.String()
}

// summary renders at most rows samples, evenly spread and always the last,
// with a bar of the RSS scaled to its maximum, and the extremes.
func (c *soakCurve) summary(rows int) string {
	if len(c.samples) == 0 {
		return "no samples\n"
	}
	lo, hi := c.samples[0], c.samples[0]
	glo, ghi := c.samples[0].goroutines, c.samples[0].goroutines
	for _, s := range c.samples {
		if s.rssKiB < lo.rssKiB {
			lo = s
		}
		if s.rssKiB > hi.rssKiB {
			hi = s
		}
		glo, ghi = min(glo, s.goroutines), max(ghi, s.goroutines)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %7s %5s %10s %4s %9s  RSS (bar: share of the maximum)\n", "time", "created", "alive", "goroutines", "fds", "RSS MiB")
	step := max(1, (len(c.samples)+rows-1)/rows)
	for i, s := range c.samples {
		if i%step != 0 && i != len(c.samples)-1 {
			continue
		}
		bar := strings.Repeat("#", int(40*float64(s.rssKiB)/float64(max(hi.rssKiB, 1))+0.5))
		fmt.Fprintf(&b, "%8s %7d %5d %10d %4d %9.1f  %s\n", s.at.Round(time.Second), s.created, s.alive, s.goroutines, s.fds, float64(s.rssKiB)/1024, bar)
	}
	fmt.Fprintf(&b, "%d samples; RSS %.1f MiB (at %s) .. %.1f MiB (at %s); goroutines %d .. %d\n",
		len(c.samples), float64(lo.rssKiB)/1024, lo.at.Round(time.Second), float64(hi.rssKiB)/1024, hi.at.Round(time.Second), glo, ghi)
	return b.String()
}

// write puts the CSV and the summary under _output/soak/ and the summary
// in the test log.
func (c *soakCurve) write(t *testing.T, form, head string) {
	t.Helper()
	c.written = true
	sum := head + c.summary(30)
	t.Logf("MEASURE soak curves:\n%s", sum)
	dir := filepath.Join(framework.RepoRoot(), "_output", "soak")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("soak curves: %v", err)
		return
	}
	base := filepath.Join(dir, fmt.Sprintf("soak-%s-%s", form, time.Now().UTC().Format("20060102-150405")))
	for path, body := range map[string]string{base + ".csv": c.csv(), base + ".txt": sum} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Errorf("soak curves: %v", err)
		}
	}
	t.Logf("soak curves written to %s.{csv,txt}", base)
}
