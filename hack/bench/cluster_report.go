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

func clusterTable(cfg config) table[*clusterResult] {
	return table[*clusterResult]{subjects: agentSubjects, bases: []string{"upstream"}, targetHeader: "target (issue 3)", rows: []row[*clusterResult]{
		{name: "node start → Node Ready", format: fmtDur, hist: histReady, histBase: "upstream",
			value: func(r *clusterResult) float64 { return r.ready.Seconds() }},
		{name: fmt.Sprintf("API pod → Running in the API, p50 (%d sequential)", cfg.pods), format: fmtDur,
			target: 0.3, targetText: "≤ " + fmtDur(0.3), hist: histAPIP50, histBase: "upstream",
			value: func(r *clusterResult) float64 { return percentile(r.api, 50).Seconds() }},
		{name: fmt.Sprintf("API pod → Running in the API, p99 (%d sequential)", cfg.pods), format: fmtDur,
			value: func(r *clusterResult) float64 { return percentile(r.api, 99).Seconds() }},
		{name: "static pod's mirror deleted → mirror back", format: fmtDur, target: 5, targetText: "≤ " + fmtDur(5),
			capped: func(r *clusterResult) bool { return r.mirrorCapped },
			value: func(r *clusterResult) float64 {
				if r.mirrorCapped {
					return mirrorCap.Seconds()
				}
				return r.mirror.Seconds()
			}},
		{name: fmt.Sprintf("API delete (3 s TERM trap) → gone from the API, p50 of %d", cfg.deletes), format: fmtDur,
			target: 3.5, targetText: "≤ " + fmtDur(3.5),
			value: func(r *clusterResult) float64 { return percentile(r.del, 50).Seconds() }},
	}}
}

// agentSubjects are the columns of the tables of the modes without the raw CRI floor.
var agentSubjects = []string{"upstream", "nodelet"}

// agentsRunLine opens the sections of the modes after the standalone one.
func agentsRunLine(cfg config, env envInfo) string {
	return fmt.Sprintf("Run %s, mode %s, commit %s; %s; same machine and runtime as above; upstream kubelet %s; nodelet %s.\n\n",
		env.date, modeName(cfg.quick), orDash(env.commit), runsNote(cfg.runs), orDash(env.kubelet), orDash(env.nodelet))
}

func renderCluster(cfg config, env envInfo, runs map[string][]*clusterResult) string {
	return clusterTable(cfg).section(agentsRunLine(cfg, env), runs, func(r *clusterResult) string {
		return fmt.Sprintf("API pod latencies (ms, in order): %s; delete → gone (ms): %s", msList(r.api), msList(r.del))
	})
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
