package main

import (
	"fmt"
	"strings"
	"time"
)

const header = `# Node conformance

The upstream e2e suite's node conformance specs (k8s.io/kubernetes v1.37.2, focus ` + "`\\[NodeConformance\\]`" + `,
skip ` + "`\\[Serial\\]|\\[Slow\\]|\\[Disruptive\\]|\\[Flaky\\]|\\[Feature:|\\[FeatureGate:`" + `), run against nodelet and
against the upstream kubelet v1.37.2 as the only node of the same loopback harness: etcd, kube-apiserver
(Node,RBAC + NodeRestriction), kube-controller-manager and kube-scheduler on 127.0.0.1, a private
containerd 1.6 with runc and the CNI bridge, and every image the specs use built locally (no registry is
reachable). This file is generated: do not edit it by hand.

How to run and regenerate it (root; builds what it needs from the tools module; a cold build of e2e.test
and the control plane takes a long time on 2 cores):

    make conformance                                    # nodelet, full selection, 2 ginkgo processes
    bash hack/conformance.sh --agent upstream           # the same against the upstream kubelet
    bash hack/conformance.sh --focus 'Pods should get a host IP'     # narrow it while developing
    go run ./hack/conformance-report                    # rewrite this file from _output/conformance/*/

Reports and logs (agent, containerd, control plane) stay in _output/conformance/AGENT/. CI runs the
smoke subset in hack/conformance-smoke.txt (specs nodelet passes today) through hack/test.sh; add a spec
there once nodelet passes it. Known reasons for specs that fail for both agents live in
hack/conformance-reasons.txt.
`

func render(c Comparison, reasons []reason, notes string, now time.Time) string {
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "\nGenerated %s.\n\n", now.Format("2006-01-02 15:04 UTC"))

	nt := totals(c.Rows, func(r Row) Outcome { return r.Nodelet })
	ut := totals(c.Rows, func(r Row) Outcome { return r.Upstream })
	b.WriteString("## Totals\n\n")
	b.WriteString("| agent | pass | fail | skipped | not run | wall time | started (UTC) | commit | ginkgo procs |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, a := range []struct {
		name string
		t    Totals
		run  Run
	}{{"nodelet", nt, c.Nodelet}, {"upstream kubelet v1.37.2", ut, c.Upstream}} {
		if !a.run.Present {
			fmt.Fprintf(&b, "| %s | - | - | - | - | no run | - | - | - |\n", a.name)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %s | %s |\n", a.name, a.t[Passed], a.t[Failed],
			a.t[Skipped], a.t[NotRun], wallTime(a.run.Env), or(a.run.Env["START"]), or(a.run.Env["COMMIT"]), or(a.run.Env["PROCS"]))
	}
	for _, a := range []struct {
		name string
		run  Run
	}{{"nodelet", c.Nodelet}, {"upstream kubelet", c.Upstream}} {
		if n := a.run.Env["RERUN_SPECS"]; n != "" && n != "0" {
			fmt.Fprintf(&b, "\nThe %s results of %s specs come from a re-run on the same harness (commit %s), after fixes to the harness or the agent; the full run's wall time above is the first run's.\n",
				a.name, n, or(a.run.Env["RERUN_COMMITS"]))
		}
	}
	fmt.Fprintf(&b, "\n%d specs selected in all. \"not run\": absent from that agent's report (the run was cut short or did not reach it).\n", len(c.Rows))
	if notes = strings.TrimSpace(notes); notes != "" {
		b.WriteString("\n## Notes on these runs\n\n" + notes + "\n")
	}

	b.WriteString("\n## Fail for both agents\n\nThese are limits of this machine or harness, not of nodelet.\n\n")
	both := 0
	for _, r := range c.Rows {
		if r.Nodelet.Result != Failed || r.Upstream.Result != Failed {
			continue
		}
		both++
		fmt.Fprintf(&b, "- %s  \n  reason: %s\n", code(r.Name), reasonFor(r, reasons))
	}
	if both == 0 {
		b.WriteString("None.\n")
	}

	b.WriteString("\n## Fail for nodelet only, by the issue that owns them\n\n")
	b.WriteString("| spec | issue | nodelet's failure |\n|---|---|---|\n")
	only := 0
	for _, r := range c.Rows {
		if r.Nodelet.Result != Failed || r.Upstream.Result == Failed {
			continue
		}
		only++
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(r.Name), or(r.Issue), cell(r.Nodelet.Message))
	}
	if only == 0 {
		b.WriteString("| none | | |\n")
	}

	b.WriteString("\n## Every spec\n\n| spec | nodelet | upstream | nodelet issue |\n|---|---|---|---|\n")
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(r.Name), r.Nodelet.Result, r.Upstream.Result, r.Issue)
	}
	return b.String()
}

// reasonFor prefers a curated reason; otherwise it quotes the upstream kubelet's failure.
func reasonFor(r Row, reasons []reason) string {
	for _, k := range reasons {
		if k.Match.MatchString(r.Name) {
			return k.Text
		}
	}
	return "not yet analysed; upstream fails with: " + code(r.Upstream.Message)
}

func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func code(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
