package main

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Result of one spec in one run.
type Result string

const (
	Passed  Result = "pass"
	Failed  Result = "FAIL"
	Skipped Result = "skip" // skipped at run time (e.g. a provider or OS check), not filtered out
	NotRun  Result = "-"    // absent from the report: the run did not get to it, or there is no run
)

// Outcome is a spec's result and, when it failed, the first line of the failure.
type Outcome struct {
	Result  Result
	Message string
}

// Run is one conformance.sh run: its metadata (run.env) and every spec it reports.
type Run struct {
	Present bool
	Env     map[string]string
	Specs   map[string]Outcome
}

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
	Skipped *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// loadRuns reads a comma-separated list of report dirs as one run: a spec's outcome in a later dir
// (a re-run of a few specs, e.g. after a harness fix) replaces the earlier one; run.env comes from the
// first dir that has a report.
func loadRuns(dirs string) (Run, error) {
	var out Run
	for _, dir := range strings.Split(dirs, ",") {
		r, err := loadRun(dir)
		if err != nil || !r.Present {
			if err != nil {
				return out, err
			}
			continue
		}
		if !out.Present {
			out = r
			continue
		}
		// A re-run's report lists every spec of the suite, the ones it filtered out as skipped: only
		// what it ran replaces the earlier outcome.
		n := 0
		for name, o := range r.Specs {
			if o.Result == Passed || o.Result == Failed {
				out.Specs[name] = o
				n++
			}
		}
		prev, _ := strconv.Atoi(out.Env["RERUN_SPECS"])
		out.Env["RERUN_SPECS"] = strconv.Itoa(prev + n)
		if c := r.Env["COMMIT"]; c != "" && !strings.Contains(out.Env["RERUN_COMMITS"], c) {
			out.Env["RERUN_COMMITS"] = strings.TrimPrefix(out.Env["RERUN_COMMITS"]+", "+c, ", ")
		}
	}
	if out.Specs == nil {
		out = Run{Env: map[string]string{}, Specs: map[string]Outcome{}}
	}
	return out, nil
}

// loadRun reads DIR/junit.xml and DIR/run.env; a missing directory or report is an absent run.
func loadRun(dir string) (Run, error) {
	r := Run{Env: map[string]string{}, Specs: map[string]Outcome{}}
	b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	var s junitSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		return r, fmt.Errorf("%s/junit.xml: %w", dir, err)
	}
	r.Present = true
	for _, suite := range s.Suites {
		for _, c := range suite.Cases {
			name, ok := specName(c.Name)
			if !ok {
				continue
			}
			r.Specs[name] = outcome(c)
		}
	}
	r.Env, err = loadEnv(filepath.Join(dir, "run.env"))
	return r, err
}

// specName strips ginkgo's "[It] " node-type prefix and the " [label, ...]" list it appends when every
// label is already in the text as "[label]" (the e2e framework puts them in both); suite-level nodes
// (BeforeSuite, ReportAfterSuite) are not specs.
func specName(junitName string) (string, bool) {
	name, ok := strings.CutPrefix(strings.TrimSpace(junitName), "[It] ")
	if !ok {
		return "", false
	}
	if i := strings.LastIndex(name, " ["); i > 0 && strings.HasSuffix(name, "]") {
		text, labels := name[:i], name[i+2:len(name)-1]
		redundant := true
		for _, l := range strings.Split(labels, ", ") {
			if !strings.Contains(text, "["+l+"]") {
				redundant = false
			}
		}
		if redundant {
			name = text
		}
	}
	return name, true
}

func outcome(c junitCase) Outcome {
	switch c.Status {
	case "passed":
		return Outcome{Result: Passed}
	case "skipped", "pending":
		return Outcome{Result: Skipped, Message: firstLine(msg(c.Skipped))}
	default: // failed, panicked, interrupted, timedout, aborted
		m := msg(c.Failure)
		if m == "" {
			m = msg(c.Error)
		}
		if m == "" {
			m = c.Status
		}
		return Outcome{Result: Failed, Message: firstLine(m)}
	}
}

func msg(m *junitMessage) string {
	if m == nil {
		return ""
	}
	if strings.TrimSpace(m.Message) != "" {
		return m.Message
	}
	return m.Body
}

// firstLine is the first non-empty line, cut to a length a table cell can hold.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if len(l) > 160 {
			l = l[:157] + "..."
		}
		return l
	}
	return ""
}

func loadEnv(path string) (map[string]string, error) {
	env := map[string]string{}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return env, nil
	}
	if err != nil {
		return env, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}

// reason is a known cause of failure for specs whose name matches Match.
type reason struct {
	Match *regexp.Regexp
	Text  string
}

// loadReasons reads REGEXP<TAB>reason lines; # starts a comment. A missing file means none.
func loadReasons(path string) ([]reason, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []reason
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		re, text, ok := strings.Cut(l, "\t")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want REGEXP<TAB>reason", path, i+1)
		}
		m, err := regexp.Compile(re)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, reason{Match: m, Text: strings.TrimSpace(text)})
	}
	return out, nil
}

func wallTime(env map[string]string) string {
	s, err := strconv.Atoi(env["WALL_SECONDS"])
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
