package server

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseNodeLogQuery(t *testing.T) {
	exists := func(name string) error {
		if name == "present.log" || name == "/present.log" {
			return nil
		}
		return os.ErrNotExist
	}
	for _, tc := range []struct {
		query string
		bad   string // "" valid; else a part of the error
	}{
		{"query=kubelet", ""},
		{"query=kubelet&query=containerd&tailLines=10&pattern=err.*&boot=-1&sinceTime=2026-12-01T00:00:00Z&untilTime=2026-12-02T00:00:00Z", ""},
		{"query=/present.log", ""},
		{"query=%20%20", "name a service or a file"},
		{"tailLines=5", "name a service or a file"},
		{"query=a%3Brm", "may only hold letters"},
		{"query=" + strings.Repeat("a", 257), "at most 256"},
		{"query=a&query=b&query=c&query=d&query=e", "at most 4 services"},
		{"query=/present.log&query=kubelet", "cannot be asked together"},
		{"query=/present.log&query=/other.log", "only one file"},
		{"query=/present.log&tailLines=3", "options apply to service logs"},
		{"query=/missing.log", "file does not exist"},
		{"query=kubelet&sinceTime=yesterday", "invalid time format"},
		{"query=kubelet&sinceTime=2026-12-02T00:00:00Z&untilTime=2026-12-01T00:00:00Z", "must be after sinceTime"},
		{"query=kubelet&boot=1", "must be 0 or less"},
		{"query=kubelet&tailLines=100001", "between 0 and 100000"},
		{"query=kubelet&tailLines=x", "not an integer"},
		{"query=kubelet&pattern=(", "pattern"},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseNodeLogQuery(q, exists)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%.80s: %v", tc.query, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%.80s: %v, want an error with %q", tc.query, err, tc.bad)
		}
	}
}

func TestJournalArgs(t *testing.T) {
	q, _ := url.ParseQuery("query=kubelet&tailLines=10&pattern=oom&boot=-1&sinceTime=2026-12-01T10:00:00%2B01:00")
	n, err := parseNodeLogQuery(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--utc", "--no-pager", "--output=short-precise", "--since=2026-12-01 09:00:00",
		"--pager-end", "--lines=10", "--unit=kubelet", "--grep=oom", "--boot=-1"}
	if got := n.journalArgs(n.services); !slices.Equal(got, want) {
		t.Errorf("journalctl %q\nwant %q", got, want)
	}
}

func TestNodeLogsEndpoint(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "log")
	for name, body := range map[string]string{
		"log/syslog": "sys line\n", "log/app.log": "app line\n", "log/svc/svc.log": "svc line\n", "secret": "outside\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(logs, "escape.log")); err != nil {
		t.Fatal(err)
	}
	var journalArgs []string
	cfg := &NodeLogs{Dir: logs, Query: true,
		HasJournal: func(_ context.Context, s string) bool { return s == "kubelet" },
		Journal: func(_ context.Context, args []string, w io.Writer) error {
			journalArgs = args
			_, err := io.WriteString(w, "journal says hi\n")
			return err
		},
	}
	d := newFakeNode().deps()
	d.NodeLogs = cfg
	h := APIRoutes(d)
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/logs/", 200, `<a href="syslog">`},
		{"/logs/syslog", 200, "sys line"},
		{"/logs/svc/svc.log", 200, "svc line"},
		{"/logs/escape.log", 500, ""},
		{"/logs/../secret", 307, ""}, // the mux redirects to the cleaned path, outside /logs
		{"/logs/?query=app", 200, "app line"},
		{"/logs/?query=svc", 200, "svc line"},
		{"/logs/?query=/syslog", 200, "sys line"},
		{"/logs/?query=/escape.log", 400, ""},
		{"/logs/?query=nothere", 200, "log not found for nothere"},
		{"/logs/?query=kubelet&tailLines=3", 200, "journal says hi"},
		{"/logs/?query=app&tailLines=3", 200, "options apply to the journal only"},
		{"/logs/?query=a%3Bb", 400, "may only hold"},
	} {
		code, body := get(t, h, "GET", tc.target)
		if code != tc.code || !strings.Contains(body, tc.body) || strings.Contains(body, "outside") {
			t.Errorf("GET %s: %d %.200q, want %d with %q and never the file outside", tc.target, code, body, tc.code, tc.body)
		}
	}
	if !slices.Contains(journalArgs, "--unit=kubelet") || !slices.Contains(journalArgs, "--lines=3") {
		t.Errorf("journalctl args %q", journalArgs)
	}

	cfg.Query = false
	if code, body := get(t, h, "GET", "/logs/?query=app"); code != 200 || !strings.Contains(body, `<a href="syslog">`) {
		t.Errorf("query off: %d %.100q, want the directory listing", code, body)
	}
	d.NodeLogs = nil
	if code, _ := get(t, APIRoutes(d), "GET", "/logs/syslog"); code != 501 {
		t.Errorf("handler off: %d, want 501", code)
	}
}
