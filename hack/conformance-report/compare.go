package main

import (
	"regexp"
	"sort"
)

// Row is one selected spec with both agents' outcomes.
type Row struct {
	Name              string
	Nodelet, Upstream Outcome
	Issue             string // for a spec nodelet fails: the feature issue it waits for
}

// Comparison is what the document shows.
type Comparison struct {
	Nodelet, Upstream Run
	Rows              []Row
}

// compare lists every selected spec either run reports, sorted by name.
func compare(nodelet, upstream Run, selected func(string) bool) Comparison {
	names := map[string]bool{}
	for _, r := range []Run{nodelet, upstream} {
		for n := range r.Specs {
			if selected(n) {
				names[n] = true
			}
		}
	}
	c := Comparison{Nodelet: nodelet, Upstream: upstream}
	for n := range names {
		row := Row{Name: n, Nodelet: get(nodelet, n), Upstream: get(upstream, n)}
		if row.Nodelet.Result == Failed {
			row.Issue = issueFor(n)
		}
		c.Rows = append(c.Rows, row)
	}
	sort.Slice(c.Rows, func(i, j int) bool { return c.Rows[i].Name < c.Rows[j].Name })
	return c
}

func get(r Run, name string) Outcome {
	if o, ok := r.Specs[name]; ok {
		return o
	}
	return Outcome{Result: NotRun}
}

// featureIssues maps spec names to the open nodelet issue that owns the behaviour they check. First
// match wins, so the narrower patterns come first.
var featureIssues = []struct {
	match *regexp.Regexp
	issue string
}{
	{regexp.MustCompile(`Ephemeral Containers`), "#20 debugging (ephemeral containers)"},
	{regexp.MustCompile(`(?i)security ?context|sysctl|privileged|runAsNonRoot|runAsUser|runAsGroup|allowPrivilegeEscalation|readOnlyRootFilesystem|AppArmor|seccomp|capabilit|user namespace|hostIPC|hostPID`), "#12 security"},
	{regexp.MustCompile(`(?i)probe|probing|lifecycle hook|prestop|poststart|sidecar|restartable|termination message|activeDeadlineSeconds|graceful|terminat`), "#10 lifecycle"},
	{regexp.MustCompile(`(?i)configmap|secret|downward ?api|projected|variable expansion|env(ironment)? var|\benv\b|/etc/hosts|etc hosts|KubeletManagedEtcHosts|service account|pull secret`), "#11 config"},
}

// issueFor names the feature issue a failing spec waits for, or "" when none of them owns it.
func issueFor(name string) string {
	for _, f := range featureIssues {
		if f.match.MatchString(name) {
			return f.issue
		}
	}
	return ""
}

// Totals counts one agent's results over the rows.
type Totals map[Result]int

func totals(rows []Row, pick func(Row) Outcome) Totals {
	t := Totals{}
	for _, r := range rows {
		t[pick(r).Result]++
	}
	return t
}
