// Command conformance-report turns the JUnit reports of hack/conformance.sh runs (one for nodelet, one
// for the upstream kubelet on the same harness) into docs/CONFORMANCE.md: each selected spec's result
// for both agents, the totals and wall times, the specs that fail for both with the reason, and the
// nodelet feature issue each nodelet-only failure waits for.
//
//	go run ./hack/conformance-report --nodelet _output/conformance/nodelet \
//	    --upstream _output/conformance/upstream --out docs/CONFORMANCE.md
//
// Each directory holds junit.xml (ginkgo --junit-report) and run.env (written by conformance.sh).
// A missing directory is reported as "not run" rather than failing, so the document can be written
// from one agent's results while the other run is still going.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.NodeletDir, "nodelet", "_output/conformance/nodelet", "report dir of the nodelet run; DIR,RERUN_DIR,... lets later dirs' results replace earlier ones")
	flag.StringVar(&o.UpstreamDir, "upstream", "_output/conformance/upstream", "report dir(s) of the upstream kubelet run, as --nodelet")
	flag.StringVar(&o.Out, "out", "docs/CONFORMANCE.md", "document to write")
	flag.StringVar(&o.Reasons, "reasons", "hack/conformance-reasons.txt", "known reasons for specs that fail for both agents (REGEXP<TAB>reason lines)")
	flag.StringVar(&o.Notes, "notes", "hack/conformance-notes.md", "hand-written notes on the current runs, placed after the totals (a missing file means none)")
	flag.StringVar(&o.Focus, "focus", `\[NodeConformance\]`, "focus regexp of the selection (as given to conformance.sh)")
	flag.StringVar(&o.Skip, "skip", `\[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|\[Feature:|\[FeatureGate:`, "skip regexp of the selection")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-report:", err)
		os.Exit(1)
	}
}

type options struct {
	NodeletDir, UpstreamDir, Out, Reasons, Notes, Focus, Skip string
}

func run(o options) error {
	focus, err := regexp.Compile(o.Focus)
	if err != nil {
		return fmt.Errorf("--focus: %w", err)
	}
	skip, err := regexp.Compile(o.Skip)
	if err != nil {
		return fmt.Errorf("--skip: %w", err)
	}
	nodelet, err := loadRuns(o.NodeletDir)
	if err != nil {
		return err
	}
	upstream, err := loadRuns(o.UpstreamDir)
	if err != nil {
		return err
	}
	reasons, err := loadReasons(o.Reasons)
	if err != nil {
		return err
	}
	notes, err := os.ReadFile(o.Notes)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("--notes: %w", err)
	}
	doc := render(compare(nodelet, upstream, func(name string) bool {
		return focus.MatchString(name) && !skip.MatchString(name)
	}), reasons, string(notes), time.Now().UTC())
	return os.WriteFile(o.Out, []byte(doc), 0o644)
}
