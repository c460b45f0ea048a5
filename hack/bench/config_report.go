package main

import (
	"fmt"
)

func configTable(cfg config) table[*configResult] {
	volsOverPlain := func(r *configResult) float64 {
		p := percentile(r.plain, 50).Seconds()
		if p == 0 {
			return 0
		}
		pairs := r.vols[:min(len(r.plain), len(r.vols))]
		return percentile(pairs, 50).Seconds() / p
	}
	update := func(p float64) func(r *configResult) float64 {
		return func(r *configResult) float64 {
			if r.updateCapped {
				return updateCap.Seconds()
			}
			return percentile(r.seen, p).Seconds()
		}
	}
	capped := func(r *configResult) bool { return r.updateCapped }
	return table[*configResult]{subjects: agentSubjects, bases: []string{"upstream"}, targetHeader: "target (issue 11)", rows: []row[*configResult]{
		{name: fmt.Sprintf("API pod without volumes → Running, p50 (%d, each before one with volumes)", cfg.pods), format: fmtDur,
			value: func(r *configResult) float64 { return percentile(r.plain, 50).Seconds() }},
		{name: fmt.Sprintf("API pod with a ConfigMap and a Secret volume → Running, p50 (%d sequential)", cfg.configPods), format: fmtDur,
			value: func(r *configResult) float64 { return percentile(r.vols, 50).Seconds() }},
		{name: fmt.Sprintf("same, p99 (%d sequential)", cfg.configPods), format: fmtDur,
			value: func(r *configResult) float64 { return percentile(r.vols, 99).Seconds() }},
		{name: fmt.Sprintf("with volumes / without, p50 of the first %d of each (alternating)", cfg.pods), noRatio: true,
			target: 1.2, targetText: "≤ 1.20×", value: volsOverPlain, format: func(v float64) string { return fmt.Sprintf("%.2f×", v) }},
		{name: fmt.Sprintf("ConfigMap update → new content in the first of %d pods", cfg.configPods), format: fmtDur, capped: capped, value: update(0)},
		{name: fmt.Sprintf("ConfigMap update → new content in half of the %d pods", cfg.configPods), format: fmtDur, capped: capped, value: update(50)},
		{name: fmt.Sprintf("ConfigMap update → new content in all %d pods", cfg.configPods), format: fmtDur, capped: capped, value: update(100),
			target: 5, targetText: "≤ 5.00 s"},
		{name: fmt.Sprintf("agent RSS with %d pods", cfg.configPods), format: fmtMiB,
			value: func(r *configResult) float64 { return float64(r.rssKiB) / 1024 }},
	}}
}

func renderConfig(cfg config, env envInfo, runs map[string][]*configResult) string {
	return configTable(cfg).section(agentsRunLine(cfg, env), runs, func(r *configResult) string {
		capped := ""
		if r.updateCapped {
			capped = fmt.Sprintf("; update seen in %d of %d pods within %s", len(r.seen), len(r.vols), fmtDur(updateCap.Seconds()))
		}
		return fmt.Sprintf("Node Ready after %s%s; pods without volumes (ms, in order): %s; with volumes (ms, in order): %s",
			r.ready.Round(1e6), capped, msList(r.plain), msList(r.vols))
	})
}
