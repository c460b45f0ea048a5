package main

import (
	"fmt"
	"sort"
	"strings"
)

// One table scaffolding for every mode: a row per figure, a column per subject holding the
// median over the runs that have the figure (with the spread when there are several), then
// nodelet's ratio to other subjects and, where the mode has targets, whether nodelet meets them.

// outcomer is every leg's result type.
type outcomer interface{ outcomeOf() *outcome }

// sample is one run's value of a figure. capped: the wait behind it hit its cap, so the figure is
// at least v.
type sample struct {
	v      float64
	capped bool
}

// stat is a figure over the runs: their median, min and max.
type stat struct {
	med, min, max float64
	n             int
	// capped: the median is a lower bound (at least half the runs hit their cap).
	capped bool
}

// summarize returns the median of samples (the mean of the two middle ones for an even count)
// with their spread. Capped samples sort by their value, which is the cap, the largest any run
// can measure.
func summarize(samples []sample) stat {
	if len(samples) == 0 {
		return stat{}
	}
	vs := make([]float64, len(samples))
	capped := 0
	for i, s := range samples {
		vs[i] = s.v
		if s.capped {
			capped++
		}
	}
	sort.Float64s(vs)
	n := len(vs)
	med := vs[n/2]
	if n%2 == 0 {
		med = (vs[n/2-1] + vs[n/2]) / 2
	}
	return stat{med: med, min: vs[0], max: vs[n-1], n: n, capped: 2*capped >= n}
}

// row is one figure of a table over results of type R.
type row[R outcomer] struct {
	name  string
	value func(r R) float64
	// capped, when set, tells a run whose wait hit its cap (the value is then the cap).
	capped func(r R) bool
	format func(v float64) string
	// brief formats the spread's bounds; nil: format.
	brief func(v float64) string
	// absent: the figure does not exist for the subject (raw CRI has no agent process); "—".
	absent func(subject string) bool
	// noRatio: the figure is a ratio itself.
	noRatio bool
	// target, when targetText is set: nodelet meets it when its median is at most target.
	target     float64
	targetText string
	// hist names the history column the row feeds ("": none): nodelet's ratio to histBase, or,
	// without a base, nodelet's own figure times histScale (0: 1) in brief's format.
	hist      string
	histBase  string
	histScale float64
}

// table describes one mode's table.
type table[R outcomer] struct {
	subjects []string // a column each, in order
	bases    []string // a "nodelet / base" column each
	// targetHeader names the target column ("target (issue 3)"); "": no target columns.
	targetHeader string
	rows         []row[R]
}

var subjectTitles = map[string]string{"raw": "raw CRI", "upstream": "upstream kubelet", "nodelet": "nodelet"}

func title(subject string) string {
	if t, ok := subjectTitles[subject]; ok {
		return t
	}
	return subject
}

// okRuns is the runs of a subject that have figures.
func okRuns[R outcomer](runs []R) []R {
	var ok []R
	for _, r := range runs {
		if r.outcomeOf().ok() {
			ok = append(ok, r)
		}
	}
	return ok
}

// runsMissing is what a cell shows for a subject none of whose runs has figures; "" when some do.
func runsMissing[R outcomer](runs []R) string {
	if len(runs) == 0 {
		return "not run"
	}
	if len(okRuns(runs)) > 0 {
		return ""
	}
	for _, r := range runs {
		if r.outcomeOf().notAvailable != "" {
			return "n/a"
		}
	}
	return "failed"
}

// figure summarizes m over the runs of a subject that have figures.
func figure[R outcomer](m row[R], runs []R) stat {
	var ss []sample
	for _, r := range okRuns(runs) {
		s := sample{v: m.value(r)}
		if m.capped != nil {
			s.capped = m.capped(r)
		}
		ss = append(ss, s)
	}
	return summarize(ss)
}

func (m row[R]) isAbsent(subject string) bool { return m.absent != nil && m.absent(subject) }

// cell is the text of m for one subject: the median, "> cap" when capped, and "(min–max)" when
// more than one run has the figure.
func (m row[R]) cell(st stat) string {
	txt := m.format(st.med)
	if st.capped {
		txt = "> " + txt
	}
	if st.n > 1 {
		brief := m.brief
		if brief == nil {
			brief = m.format
		}
		txt += fmt.Sprintf(" (%s–%s)", brief(st.min), brief(st.max))
	}
	return txt
}

// render writes the table: header, one line per row.
func (t table[R]) render(b *strings.Builder, runs map[string][]R) {
	b.WriteString("| metric |")
	sep := "|---|"
	for _, s := range t.subjects {
		fmt.Fprintf(b, " %s |", title(s))
		sep += "---:|"
	}
	for _, base := range t.bases {
		fmt.Fprintf(b, " nodelet / %s |", strings.TrimSuffix(title(base), " kubelet"))
		sep += "---:|"
	}
	if t.targetHeader != "" {
		fmt.Fprintf(b, " %s | nodelet meets it |", t.targetHeader)
		sep += "---:|:---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, m := range t.rows {
		cells := []string{m.name}
		for _, s := range t.subjects {
			switch {
			case m.isAbsent(s):
				cells = append(cells, "—")
			case runsMissing(runs[s]) != "":
				cells = append(cells, runsMissing(runs[s]))
			default:
				cells = append(cells, m.cell(figure(m, runs[s])))
			}
		}
		for _, base := range t.bases {
			cells = append(cells, t.ratio(m, runs, base))
		}
		if t.targetHeader != "" {
			target, meets := "—", "—"
			if m.targetText != "" {
				target = m.targetText
				if runsMissing(runs["nodelet"]) == "" {
					n := figure(m, runs["nodelet"])
					meets = "no"
					if !n.capped && n.med <= m.target {
						meets = "yes"
					}
				}
			}
			cells = append(cells, target, meets)
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
}

// ratio is nodelet's median over base's: "< x" when base's is capped (a lower bound), "—" when
// there is nothing to divide.
func (t table[R]) ratio(m row[R], runs map[string][]R, base string) string {
	if m.noRatio || m.isAbsent(base) || m.isAbsent("nodelet") || runsMissing(runs[base]) != "" || runsMissing(runs["nodelet"]) != "" {
		return "—"
	}
	b, n := figure(m, runs[base]), figure(m, runs["nodelet"])
	switch {
	case n.capped || b.med == 0:
		return "—"
	case b.capped:
		return "< " + fmtRatio(n.med/b.med)
	}
	return fmtRatio(n.med / b.med)
}

// writeNotes writes, under a table, a line per subject and run: why it has no figures, or
// detail(r) and the load it ran under.
func writeNotes[R outcomer](b *strings.Builder, subjects []string, runs map[string][]R, detail func(r R) string) {
	for _, s := range subjects {
		for i, r := range runs[s] {
			label := s
			if len(runs[s]) > 1 {
				label = fmt.Sprintf("%s, run %d", s, i+1)
			}
			writeOutcomeNote(b, label, r.outcomeOf(), func() string { return detail(r) })
		}
	}
}

// history fills the history columns the rows feed; "—" where nodelet has no figure.
func (t table[R]) history(runs map[string][]R, h map[string]string) {
	for _, m := range t.rows {
		switch {
		case m.hist == "":
		case m.histBase != "":
			h[m.hist] = t.ratio(m, runs, m.histBase)
		case runsMissing(runs["nodelet"]) != "":
			h[m.hist] = "—"
		default:
			scale, brief := m.histScale, m.brief
			if scale == 0 {
				scale = 1
			}
			if brief == nil {
				brief = m.format
			}
			h[m.hist] = brief(figure(m, runs["nodelet"]).med * scale)
		}
	}
}

// section is a mode's generated section: intro, the table, then a note per subject and run.
func (t table[R]) section(intro string, runs map[string][]R, detail func(r R) string) string {
	var b strings.Builder
	b.WriteString(intro)
	t.render(&b, runs)
	b.WriteString("\n")
	writeNotes(&b, t.subjects, runs, detail)
	return strings.TrimRight(b.String(), "\n")
}
