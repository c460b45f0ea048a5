package main

import (
	"fmt"
	"os"
	"strings"
)

// The history of the reference figures: every full run that writes the doc appends one row, with
// its commit, to a table that is never rewritten, where the generated sections above it keep
// only the latest run.

const (
	historyBeginMarker = "<!-- BEGIN GENERATED: hack/bench.sh history -->"
	historyEndMarker   = "<!-- END GENERATED: hack/bench.sh history -->"
)

// The history columns after date, commit and runs; rows name the ones they feed (row.hist).
const (
	histStartP50 = "static pod start p50 / raw CRI"
	histBurst    = "burst / raw CRI"
	histIdle     = "idle CPU per minute, 70 pods"
	histIdleMany = "idle CPU per minute, 110 pods"
	histRSS      = "RSS after the burst, 70 pods"
	histRSSMany  = "RSS, 110 pods"
	histAPIP50   = "API pod → Running p50 / upstream"
	histReady    = "node start → Ready / upstream"
)

var historyColumns = []string{histStartP50, histBurst, histIdle, histIdleMany, histRSS, histRSSMany, histAPIP50, histReady}

func historyHeader() string {
	return "| date | commit | runs | " + strings.Join(historyColumns, " | ") + " |\n" +
		"|---|---|---:|" + strings.Repeat("---:|", len(historyColumns))
}

// historyLine is one run's row; columns the run did not measure are "—".
func historyLine(env envInfo, runs int, h map[string]string) string {
	cells := []string{env.date, orDash(env.commit), fmt.Sprint(runs)}
	for _, c := range historyColumns {
		cells = append(cells, orDash(h[c]))
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// appendHistory adds line as the last row of doc's history table; a doc without one gets it
// appended, header first.
func appendHistory(doc, line string) (string, error) {
	i := strings.Index(doc, historyBeginMarker)
	j := strings.Index(doc, historyEndMarker)
	switch {
	case i < 0 && j < 0:
		block := historyBeginMarker + "\n" + historyHeader() + "\n" + line + "\n" + historyEndMarker
		return strings.TrimRight(doc, "\n") + "\n\n" + block + "\n", nil
	case i < 0 || j < i:
		return "", fmt.Errorf("history markers are broken")
	}
	body := strings.TrimRight(doc[i+len(historyBeginMarker):j], "\n")
	if strings.TrimSpace(body) == "" {
		body = "\n" + historyHeader()
	}
	return doc[:i] + historyBeginMarker + body + "\n" + line + "\n" + doc[j:], nil
}

// updateHistory appends the run's row to path's history table.
func updateHistory(path string, env envInfo, runs int, h map[string]string) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		data = []byte("# Benchmarks\n\n")
	} else if err != nil {
		return err
	}
	out, err := appendHistory(string(data), historyLine(env, runs, h))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
