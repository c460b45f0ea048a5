package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []sample
		want stat
	}{
		{"none", nil, stat{}},
		{"one", []sample{{v: 3}}, stat{med: 3, min: 3, max: 3, n: 1}},
		{"odd count: the middle one", []sample{{v: 9}, {v: 1}, {v: 4}}, stat{med: 4, min: 1, max: 9, n: 3}},
		{"even count: mean of the middle two", []sample{{v: 4}, {v: 1}, {v: 2}, {v: 8}}, stat{med: 3, min: 1, max: 8, n: 4}},
		{"one noisy run does not move the median", []sample{{v: 1.0}, {v: 1.1}, {v: 9}}, stat{med: 1.1, min: 1, max: 9, n: 3}},
		{"a minority capped: a real median", []sample{{v: 90, capped: true}, {v: 1}, {v: 2}}, stat{med: 2, min: 1, max: 90, n: 3}},
		{"a majority capped: a lower bound", []sample{{v: 90, capped: true}, {v: 90, capped: true}, {v: 2}}, stat{med: 90, min: 2, max: 90, n: 3, capped: true}},
		{"half capped: a lower bound", []sample{{v: 90, capped: true}, {v: 2}}, stat{med: 46, min: 2, max: 90, n: 2, capped: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.in); got != tc.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRowCell(t *testing.T) {
	m := row[*result]{format: fmtDur}
	cpu := row[*result]{format: func(v float64) string { return fmtSec(v) + " (x% of a core)" }, brief: fmtSec}
	for _, tc := range []struct {
		name string
		m    row[*result]
		st   stat
		want string
	}{
		{"one run: no spread", m, stat{med: 0.136, min: 0.136, max: 0.136, n: 1}, "136 ms"},
		{"runs: median and spread", m, stat{med: 0.136, min: 0.128, max: 1.5, n: 3}, "136 ms (128 ms–1.50 s)"},
		{"capped", m, stat{med: 90, min: 90, max: 90, n: 1, capped: true}, "> 90.00 s"},
		{"brief bounds", cpu, stat{med: 0.43, min: 0.4, max: 0.5, n: 3}, "0.43 s (x% of a core) (0.40 s–0.50 s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.cell(tc.st); got != tc.want {
				t.Errorf("cell = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTableMedianOfRuns(t *testing.T) {
	ms := func(d ...int) []*clusterResult {
		var rs []*clusterResult
		for _, v := range d {
			r := &clusterResult{outcome: outcome{subject: "x"}, ready: time.Duration(v) * time.Millisecond}
			if v < 0 {
				r.err = errors.New("boom")
			}
			rs = append(rs, r)
		}
		return rs
	}
	cfg := config{pods: 1, deletes: 1, runs: 3}
	tbl := clusterTable(cfg)
	tbl.rows = tbl.rows[:1] // node start -> Ready
	for _, tc := range []struct {
		name string
		runs map[string][]*clusterResult
		want string
	}{
		{"medians, spreads, ratio of the medians",
			map[string][]*clusterResult{"upstream": ms(800, 1000, 5000), "nodelet": ms(100, 90, 110)},
			"| node start → Node Ready | 1.00 s (800 ms–5.00 s) | 100 ms (90 ms–110 ms) | 0.10× | — | — |"},
		{"a failed run is left out of the median",
			map[string][]*clusterResult{"upstream": ms(800, -1, 1000), "nodelet": ms(100, 100, -1)},
			"| node start → Node Ready | 900 ms (800 ms–1.00 s) | 100 ms (100 ms–100 ms) | 0.11× | — | — |"},
		{"every run failed",
			map[string][]*clusterResult{"upstream": ms(-1, -1), "nodelet": ms(100)},
			"| node start → Node Ready | failed | 100 ms | — | — | — |"},
		{"not run",
			map[string][]*clusterResult{"nodelet": ms(100)},
			"| node start → Node Ready | not run | 100 ms | — | — | — |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tbl.render(&b, tc.runs)
			if !strings.Contains(b.String(), tc.want+"\n") {
				t.Errorf("missing %q in\n%s", tc.want, b.String())
			}
		})
	}
}

func TestStandaloneManyPodsRowsAndHistory(t *testing.T) {
	cfg := config{pods: 2, burst: 3, manyPods: 110, idle: 30 * time.Second, runtimePID: 1, runs: 1}
	r := func(s string, seq, cpu float64, rssMiB int64) []*result {
		return []*result{{outcome: outcome{subject: s}, seq: []time.Duration{time.Duration(seq * float64(time.Second))},
			burst: 2 * time.Second, idleCPU: cpu, rssKiB: rssMiB << 10,
			many: idleFigures{cpu: 2 * cpu, rssKiB: (rssMiB + 3) << 10}}}
	}
	runs := map[string][]*result{"raw": r("raw", 0.1, 0, 0), "upstream": r("upstream", 0.2, 1, 90), "nodelet": r("nodelet", 0.11, 0.25, 37)}
	out := render(cfg, envInfo{}, runs)
	for _, want := range []string{
		"| metric | raw CRI | upstream kubelet | nodelet | nodelet / raw CRI | nodelet / upstream |",
		"| CPU over 30 s idle (110 pods) | — | 2.00 s (6.7% of a core) | 0.50 s (1.7% of a core) | — | 0.25× |",
		"| RSS at the end of that window (110 pods) | — | 93.0 MiB | 40.0 MiB | — | 0.43× |",
		"one run",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	h := map[string]string{}
	standaloneTable(cfg).history(runs, h)
	want := map[string]string{histStartP50: "1.10×", histBurst: "1.00×", histIdle: "0.50 s", histIdleMany: "1.00 s", histRSS: "37.0 MiB", histRSSMany: "40.0 MiB"}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("history %q = %q, want %q", k, h[k], v)
		}
	}
	cfg.manyPods = 5 // not more than pods+burst: no second window
	if out := render(cfg, envInfo{}, runs); strings.Contains(out, "110 pods") || strings.Contains(out, "that window") {
		t.Errorf("second idle window shown without one:\n%s", out)
	}
}

func TestAppendHistory(t *testing.T) {
	line := historyLine(envInfo{date: "d2", commit: "c2"}, 3, map[string]string{histStartP50: "1.05×"})
	if !strings.HasPrefix(line, "| d2 | c2 | 3 | 1.05× | — |") {
		t.Fatalf("line = %q", line)
	}
	withRow := "# B\n\n" + historyBeginMarker + "\n" + historyHeader() + "\n| d1 | c1 |\n" + historyEndMarker + "\n\nafter\n"
	for _, tc := range []struct {
		name, doc, want string
		err             bool
	}{
		{"appends after the last row", withRow,
			"# B\n\n" + historyBeginMarker + "\n" + historyHeader() + "\n| d1 | c1 |\n" + line + "\n" + historyEndMarker + "\n\nafter\n", false},
		{"empty block gets the header", "# B\n" + historyBeginMarker + "\n" + historyEndMarker + "\n",
			"# B\n" + historyBeginMarker + "\n" + historyHeader() + "\n" + line + "\n" + historyEndMarker + "\n", false},
		{"no block: appended", "# B\n",
			"# B\n\n" + historyBeginMarker + "\n" + historyHeader() + "\n" + line + "\n" + historyEndMarker + "\n", false},
		{"broken markers", historyEndMarker + historyBeginMarker, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appendHistory(tc.doc, line)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}
