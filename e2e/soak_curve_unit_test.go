//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestSoakCurveSummary: the table keeps at most the rows asked for, always
// the last sample, and names the extremes; the CSV has every sample.
func TestSoakCurveSummary(t *testing.T) {
	c := &soakCurve{}
	for i := range 10 {
		c.samples = append(c.samples, soakSample{at: time.Duration(i) * 10 * time.Second, created: i * 10, alive: min(i*10, 30),
			procFigures: procFigures{goroutines: 80 + i, fds: 15, rssKiB: 100<<10 + i*1024}})
	}
	sum := c.summary(4)
	lines := strings.Split(strings.TrimSpace(sum), "\n")
	// header + rows 0, 3, 6, 9 + the extremes line
	if len(lines) != 6 {
		t.Fatalf("summary has %d lines, want 6:\n%s", len(lines), sum)
	}
	if !strings.HasPrefix(strings.TrimSpace(lines[4]), "1m30s") {
		t.Errorf("last row is not the last sample: %q", lines[4])
	}
	if want := "RSS 100.0 MiB (at 0s) .. 109.0 MiB (at 1m30s); goroutines 80 .. 89"; !strings.Contains(lines[5], want) {
		t.Errorf("extremes line %q, want it to contain %q", lines[5], want)
	}
	if got := strings.Count(c.csv(), "\n"); got != 11 {
		t.Errorf("CSV has %d lines, want 11 (header + 10)", got)
	}
	if got := (&soakCurve{}).summary(4); got != "no samples\n" {
		t.Errorf("empty curve: %q", got)
	}
}
