package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
)

// NodeLogs configures /logs/: the node's log files and, when Query is on,
// the node log query (?query=...), as upstream's enableSystemLogHandler and
// enableSystemLogQuery.
type NodeLogs struct {
	// Dir is the directory served (upstream: /var/log). Nothing outside
	// it is ever read: the files are opened through an os.Root, which
	// refuses ".." and symbolic links that lead out.
	Dir string
	// Query turns the node log query on.
	Query bool
	// Journal runs journalctl with args, writing its output to w; nil
	// when the node has no journal.
	Journal func(ctx context.Context, args []string, w io.Writer) error
	// HasJournal says whether service logs to the journal (else its logs
	// are looked for in files); nil: no service does.
	HasJournal func(ctx context.Context, service string) bool
}

// Upstream's limits on a node log query.
const (
	maxLogTailLines   = 100000
	maxServiceNameLen = 256
	maxLogServices    = 4
	nodeLogQueryTime  = 30 * time.Second
)

// unsafeServiceChars: a service name is passed to journalctl, so only
// characters that cannot form another argument or pattern are allowed.
var unsafeServiceChars = regexp.MustCompile(`[^a-zA-Z0-9@_-]`)

// nodeLogQuery is a parsed ?query=... request.
type nodeLogQuery struct {
	services, files []string
	since, until    *time.Time
	tailLines, boot *int
	pattern         string
	hasOptions      bool
}

// parseNodeLogQuery reads and validates the query parameters by upstream's
// rules: a value with a slash names a file under the log directory,
// another a service; services at most 4 with safe names; one file and no
// options with it; sinceTime before untilTime (RFC 3339); boot <= 0;
// tailLines 0..100000; pattern a valid Perl-syntax regular expression.
func parseNodeLogQuery(q url.Values, exists func(name string) error) (*nodeLogQuery, error) {
	var n nodeLogQuery
	var errs []error
	bad := func(field, value, why string) { errs = append(errs, fmt.Errorf("%s %q: %s", field, value, why)) }
	for _, v := range q["query"] {
		switch {
		case strings.ContainsAny(v, `/\`):
			n.files = append(n.files, v)
		case strings.TrimSpace(v) != "":
			n.services = append(n.services, v)
		}
	}
	timeParam := func(name string) *time.Time {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad(name, v, "invalid time format, want RFC 3339")
			return nil
		}
		n.hasOptions = true
		return &t
	}
	intParam := func(name string) *int {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		i, err := strconv.Atoi(v)
		if err != nil {
			bad(name, v, "not an integer")
			return nil
		}
		n.hasOptions = true
		return &i
	}
	n.since, n.until = timeParam("sinceTime"), timeParam("untilTime")
	n.tailLines, n.boot = intParam("tailLines"), intParam("boot")
	if n.pattern = q.Get("pattern"); n.pattern != "" {
		n.hasOptions = true
		if _, err := syntax.Parse(n.pattern, syntax.Perl); err != nil {
			bad("pattern", n.pattern, err.Error())
		}
	}
	for _, s := range n.services {
		if len(s) > maxServiceNameLen {
			bad("query", s, fmt.Sprintf("a service name is at most %d characters", maxServiceNameLen))
		} else if unsafeServiceChars.MatchString(s) {
			bad("query", s, "a service name may only hold letters, digits, '-', '_' and '@'")
		}
	}
	switch {
	case len(n.files) == 0 && len(n.services) == 0:
		errs = append(errs, errors.New("query: name a service or a file under the log directory"))
	case len(n.services) > maxLogServices:
		bad("query", strings.Join(n.services, ","), fmt.Sprintf("at most %d services", maxLogServices))
	case len(n.files) > 0 && len(n.services) > 0:
		errs = append(errs, fmt.Errorf("query: a file (%v) and services (%v) cannot be asked together", n.files, n.services))
	case len(n.files) > 1:
		bad("query", strings.Join(n.files, ","), "only one file at a time")
	case len(n.files) == 1 && n.hasOptions:
		bad("query", n.files[0], "options apply to service logs, not to a file")
	case len(n.files) == 1:
		if err := exists(n.files[0]); err != nil {
			bad("query", n.files[0], err.Error())
		}
	}
	if n.since != nil && n.until != nil && n.since.After(*n.until) {
		errs = append(errs, errors.New("untilTime: must be after sinceTime"))
	}
	if n.boot != nil && *n.boot > 0 {
		bad("boot", strconv.Itoa(*n.boot), "must be 0 or less (0 this boot, -1 the one before, ...)")
	}
	if n.tailLines != nil && (*n.tailLines < 0 || *n.tailLines > maxLogTailLines) {
		bad("tailLines", strconv.Itoa(*n.tailLines), fmt.Sprintf("must be between 0 and %d", maxLogTailLines))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, errors.Join(errs...))
	}
	return &n, nil
}

// journalArgs are journalctl's arguments for the query's services.
func (n *nodeLogQuery) journalArgs(services []string) []string {
	args := []string{"--utc", "--no-pager", "--output=short-precise"}
	if n.since != nil {
		args = append(args, "--since="+n.since.UTC().Format("2006-01-02 15:04:05"))
	}
	if n.until != nil {
		args = append(args, "--until="+n.until.UTC().Format("2006-01-02 15:04:05"))
	}
	if n.tailLines != nil {
		args = append(args, "--pager-end", "--lines="+strconv.Itoa(*n.tailLines))
	}
	for _, s := range services {
		args = append(args, "--unit="+s)
	}
	if n.pattern != "" {
		args = append(args, "--grep="+n.pattern)
	}
	boot := 0
	if n.boot != nil {
		boot = *n.boot
	}
	return append(args, "--boot="+strconv.Itoa(boot))
}

// nodeLogsHandler serves GET /logs/ and /logs/{path...}.
func nodeLogsHandler(cfg *NodeLogs) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if cfg == nil || cfg.Dir == "" {
			return notImplemented("node logs")
		}
		root, err := os.OpenRoot(cfg.Dir)
		if err != nil {
			return fmt.Errorf("node log directory: %w", err)
		}
		defer root.Close()
		if cfg.Query && r.URL.Query().Has("query") {
			return serveNodeLogQuery(w, r, cfg, root)
		}
		http.StripPrefix("/logs", http.FileServerFS(root.FS())).ServeHTTP(w, r)
		return nil
	})
}

func serveNodeLogQuery(w http.ResponseWriter, r *http.Request, cfg *NodeLogs, root *os.Root) error {
	n, err := parseNodeLogQuery(r.URL.Query(), func(name string) error {
		fi, err := root.Stat(inLogDir(name))
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return errors.New("is a directory")
		}
		return nil
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), nodeLogQueryTime)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	if len(n.files) == 1 {
		return copyLogFile(ctx, w, root, n.files[0])
	}
	var journald, files []string
	for _, s := range n.services {
		if cfg.Journal != nil && cfg.HasJournal != nil && cfg.HasJournal(ctx, s) {
			journald = append(journald, s)
		} else {
			files = append(files, s)
		}
	}
	if len(journald) > 0 {
		if err := cfg.Journal(ctx, n.journalArgs(journald), w); err != nil {
			fmt.Fprintf(w, "\nerror: journal output not available: %v\n", err)
		}
	}
	if len(files) > 0 && n.hasOptions {
		fmt.Fprintf(w, "\nthe query found log files, not the journal, for %v: options apply to the journal only; ask again without them\n", files)
		return nil
	}
	for _, s := range files {
		copyServiceLogFile(ctx, w, root, s)
	}
	return nil
}

// copyServiceLogFile looks for a service's log in the files upstream tries,
// in its order: <dir>/<s>, <dir>/<s>.log, <dir>/<s>/<s>.log.
func copyServiceLogFile(ctx context.Context, w io.Writer, root *os.Root, service string) {
	for _, name := range []string{service, service + ".log", service + "/" + service + ".log"} {
		err := copyLogFile(ctx, w, root, name)
		if err == nil {
			return
		}
		if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(w, "\nerror getting log for %s: %v\n", service, err)
			return
		}
	}
	fmt.Fprintf(w, "\nlog not found for %s\n", service)
}

// copyLogFile copies a regular file of the log directory to w.
func copyLogFile(ctx context.Context, w io.Writer, root *os.Root, name string) error {
	name = inLogDir(name)
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	_, err = io.Copy(w, bufio.NewReader(ctxReader{ctx, f}))
	return err
}

// inLogDir is name as a path relative to the log directory: cleaned, any
// leading "/" or ".." dropped (the os.Root refuses what still leads out).
func inLogDir(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
