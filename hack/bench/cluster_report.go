package main

import (
	"fmt"
	"strings"
	"time"
)

const (
	clusterBeginMarker = "<!-- BEGIN GENERATED: hack/bench.sh cluster mode -->"
	clusterEndMarker   = "<!-- END GENERATED: hack/bench.sh cluster mode -->"
)

// clusterMetric is one row of the cluster table. value's second result is false when there is no
// figure; capped means "more than the cap" (a mirror that did not come back).
type clusterMetric struct {
	name   string
	target float64 // seconds; 0 = none
	value  func(r *clusterResult) (v float64, capped bool)
}

func clusterMetrics(cfg config) []clusterMetric {
	return []clusterMetric{
		{name: "node start → Node Ready",
			value: func(r *clusterResult) (float64, bool) { return r.ready.Seconds(), false }},
		{name: fmt.Sprintf("API pod → Running in the API, p50 (%d sequential)", cfg.pods), target: 0.3,
			value: func(r *clusterResult) (float64, bool) { return percentile(r.api, 50).Seconds(), false }},
		{name: fmt.Sprintf("API pod → Running in the API, p99 (%d sequential)", cfg.pods),
			value: func(r *clusterResult) (float64, bool) { return percentile(r.api, 99).Seconds(), false }},
		{name: "static pod's mirror deleted → mirror back", target: 5,
			value: func(r *clusterResult) (float64, bool) {
				if r.mirrorCapped {
					return mirrorCap.Seconds(), true
				}
				return r.mirror.Seconds(), false
			}},
		{name: fmt.Sprintf("API delete (3 s TERM trap) → gone from the API, p50 of %d", cfg.deletes), target: 3.5,
			value: func(r *clusterResult) (float64, bool) { return percentile(r.del, 50).Seconds(), false }},
	}
}

func renderCluster(cfg config, env envInfo, results []*clusterResult) string {
	by := bySubject(results)
	ok := func(r *clusterResult) bool { return r.outcomeOf().ok() }
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s, mode %s, commit %s; same machine and runtime as above; upstream kubelet %s; nodelet %s.\n\n",
		env.date, modeName(cfg.quick), orDash(env.commit), orDash(env.kubelet), orDash(env.nodelet))
	b.WriteString("| metric | upstream kubelet | nodelet | nodelet / upstream | target (issue 3) | nodelet meets it |\n")
	b.WriteString("|---|---:|---:|---:|---:|:---:|\n")
	for _, m := range clusterMetrics(cfg) {
		cell := func(s string) string {
			r := by[s]
			if missing := r.outcomeOf().missing(); missing != "" {
				return missing
			}
			v, capped := m.value(r)
			if capped {
				return "> " + fmtDur(v)
			}
			return fmtDur(v)
		}
		ratio := "—"
		if ok(by["upstream"]) && ok(by["nodelet"]) {
			u, uc := m.value(by["upstream"])
			n, nc := m.value(by["nodelet"])
			switch {
			case nc || u == 0:
			case uc:
				ratio = "< " + fmtRatio(n/u)
			default:
				ratio = fmtRatio(n / u)
			}
		}
		target, meets := "—", "—"
		if m.target > 0 {
			target = "≤ " + fmtDur(m.target)
			if ok(by["nodelet"]) {
				n, nc := m.value(by["nodelet"])
				meets = "no"
				if !nc && n <= m.target {
					meets = "yes"
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", m.name, cell("upstream"), cell("nodelet"), ratio, target, meets)
	}
	b.WriteString("\n")
	for _, s := range []string{"upstream", "nodelet"} {
		writeOutcomeNote(&b, s, by[s].outcomeOf(), func() string {
			return fmt.Sprintf("API pod latencies (ms, in order): %s; delete → gone (ms): %s", msList(by[s].api), msList(by[s].del))
		})
	}
	return strings.TrimRight(b.String(), "\n")
}

func msList(ds []time.Duration) string {
	ms := make([]string, len(ds))
	for i, d := range ds {
		ms[i] = fmt.Sprint(d.Milliseconds())
	}
	return strings.Join(ms, " ")
}

// fmtRatio keeps two significant digits for small ratios (a 38 ms vs 58 s mirror is not "0.00×").
func fmtRatio(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.2g×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}
