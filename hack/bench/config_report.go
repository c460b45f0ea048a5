package main

import (
	"fmt"
	"strings"
)

// configMetric is one row of the config table; value's second result is
// false when the figure is "more than the cap".
type configMetric struct {
	name    string
	target  string
	noRatio bool                       // the figure is a ratio itself
	meets   func(n *configResult) bool // nil: no target
	value   func(r *configResult) (string, float64, bool)
}

func configMetrics(cfg config) []configMetric {
	dur := func(f func(r *configResult) float64) func(r *configResult) (string, float64, bool) {
		return func(r *configResult) (string, float64, bool) { v := f(r); return fmtDur(v), v, true }
	}
	volsOverPlain := func(r *configResult) float64 {
		p := percentile(r.plain, 50).Seconds()
		if p == 0 {
			return 0
		}
		pairs := r.vols[:min(len(r.plain), len(r.vols))]
		return percentile(pairs, 50).Seconds() / p
	}
	update := func(p float64) func(r *configResult) (string, float64, bool) {
		return func(r *configResult) (string, float64, bool) {
			if r.updateCapped {
				return fmt.Sprintf("> %s (%d of %d)", fmtDur(updateCap.Seconds()), len(r.seen), len(r.vols)), updateCap.Seconds(), false
			}
			v := percentile(r.seen, p).Seconds()
			return fmtDur(v), v, true
		}
	}
	return []configMetric{
		{name: fmt.Sprintf("API pod without volumes → Running, p50 (%d, each before one with volumes)", cfg.pods),
			value: dur(func(r *configResult) float64 { return percentile(r.plain, 50).Seconds() })},
		{name: fmt.Sprintf("API pod with a ConfigMap and a Secret volume → Running, p50 (%d sequential)", cfg.configPods),
			value: dur(func(r *configResult) float64 { return percentile(r.vols, 50).Seconds() })},
		{name: fmt.Sprintf("same, p99 (%d sequential)", cfg.configPods),
			value: dur(func(r *configResult) float64 { return percentile(r.vols, 99).Seconds() })},
		{name: fmt.Sprintf("with volumes / without, p50 of the first %d of each (alternating)", cfg.pods), target: "≤ 1.20×", noRatio: true,
			meets: func(n *configResult) bool { return volsOverPlain(n) <= 1.2 },
			value: func(r *configResult) (string, float64, bool) {
				v := volsOverPlain(r)
				return fmt.Sprintf("%.2f×", v), v, true
			}},
		{name: fmt.Sprintf("ConfigMap update → new content in the first of %d pods", cfg.configPods), value: update(0)},
		{name: fmt.Sprintf("ConfigMap update → new content in half of the %d pods", cfg.configPods), value: update(50)},
		{name: fmt.Sprintf("ConfigMap update → new content in all %d pods", cfg.configPods), target: "< 5.00 s",
			meets: func(n *configResult) bool { return !n.updateCapped && percentile(n.seen, 100).Seconds() < 5 },
			value: update(100)},
		{name: fmt.Sprintf("agent RSS with %d pods", cfg.configPods),
			value: func(r *configResult) (string, float64, bool) {
				v := float64(r.rssKiB) / 1024
				return fmtMiB(v), v, r.rssKiB > 0
			}},
	}
}

func renderConfig(cfg config, env envInfo, results []*configResult) string {
	by := bySubject(results)
	ok := func(r *configResult) bool { return r.outcomeOf().ok() }
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s, mode %s, commit %s; same machine and runtime as above; upstream kubelet %s; nodelet %s.\n\n",
		env.date, modeName(cfg.quick), orDash(env.commit), orDash(env.kubelet), orDash(env.nodelet))
	b.WriteString("| metric | upstream kubelet | nodelet | nodelet / upstream | target (issue 11) | nodelet meets it |\n")
	b.WriteString("|---|---:|---:|---:|---:|:---:|\n")
	for _, m := range configMetrics(cfg) {
		cell := func(s string) string {
			if missing := by[s].outcomeOf().missing(); missing != "" {
				return missing
			}
			txt, _, _ := m.value(by[s])
			return txt
		}
		ratio := "—"
		if ok(by["upstream"]) && ok(by["nodelet"]) && !m.noRatio {
			_, u, uok := m.value(by["upstream"])
			_, n, nok := m.value(by["nodelet"])
			switch {
			case !nok || u == 0:
			case !uok:
				ratio = "< " + fmtRatio(n/u)
			default:
				ratio = fmtRatio(n / u)
			}
		}
		target, meets := "—", "—"
		if m.meets != nil {
			target = m.target
			if ok(by["nodelet"]) {
				meets = "no"
				if m.meets(by["nodelet"]) {
					meets = "yes"
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", m.name, cell("upstream"), cell("nodelet"), ratio, target, meets)
	}
	b.WriteString("\n")
	for _, s := range []string{"upstream", "nodelet"} {
		writeOutcomeNote(&b, s, by[s].outcomeOf(), func() string {
			return fmt.Sprintf("Node Ready after %s; pods without volumes (ms, in order): %s; with volumes (ms, in order): %s",
				by[s].ready.Round(1e6), msList(by[s].plain), msList(by[s].vols))
		})
	}
	return strings.TrimRight(b.String(), "\n")
}
