package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/logs"
)

// containerLogsHandler serves GET /containerLogs/{namespace}/{pod}/{container}
// with upstream's parameters: follow, previous, timestamps, tailLines,
// limitBytes, sinceSeconds, sinceTime. The API server forwards kubectl logs
// here.
func containerLogsHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.ReadLogs == nil {
			return notImplemented("container logs")
		}
		opts, previous, err := parseLogOptions(r.URL.Query(), time.Now())
		if err != nil {
			return err
		}
		p, err := d.podFromPath(r)
		if err != nil {
			return err
		}
		c, err := d.findContainer(r.Context(), p, r.PathValue("container"), previous)
		if err != nil {
			return err
		}
		if c.LogPath == "" {
			return fmt.Errorf("container %q in pod %q has no log file", c.Name, p.Name)
		}
		fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		err = d.ReadLogs(r.Context(), c.LogPath, c.ID, opts, fw, fw)
		if !fw.started() {
			if err != nil {
				return err
			}
			// An empty log is still a 200 with an empty body.
			w.WriteHeader(http.StatusOK)
		} else if err != nil {
			// The status line is gone; all that is left is to cut the
			// body short and say why in the log.
			klog.ErrorS(err, "Container logs cut short", "pod", klog.KObj(p), "container", c.Name)
		}
		return nil
	})
}

// parseLogOptions reads and checks the log query parameters.
func parseLogOptions(q url.Values, now time.Time) (logs.Options, bool, error) {
	var opts logs.Options
	bad := func(format string, args ...any) (logs.Options, bool, error) {
		return logs.Options{}, false, fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrBadRequest)
	}
	var err error
	if opts.Follow, err = boolParam(q, "follow"); err != nil {
		return bad("%v", err)
	}
	previous, err := boolParam(q, "previous")
	if err != nil {
		return bad("%v", err)
	}
	if opts.Timestamps, err = boolParam(q, "timestamps"); err != nil {
		return bad("%v", err)
	}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return bad("tailLines %q must be a non-negative integer", v)
		}
		opts.TailLines = &n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return bad("limitBytes %q must be a positive integer", v)
		}
		opts.LimitBytes = &n
	}
	since, sinceTime := q.Get("sinceSeconds"), q.Get("sinceTime")
	switch {
	case since != "" && sinceTime != "":
		return bad("sinceSeconds and sinceTime cannot both be set")
	case since != "":
		n, err := strconv.ParseInt(since, 10, 64)
		if err != nil || n < 1 {
			return bad("sinceSeconds %q must be a positive integer", since)
		}
		opts.Since = now.Add(-time.Duration(n) * time.Second)
	case sinceTime != "":
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return bad("sinceTime %q: %v", sinceTime, err)
		}
		opts.Since = t
	}
	return opts, previous, nil
}

func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q is not a boolean", name, v)
	}
	return b, nil
}

// flushWriter sends every write at once, so kubectl logs -f shows lines as
// they are written. Both streams share it; ReadLogs writes from one
// goroutine, the lock only guards against a future change of that.
type flushWriter struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	wrote bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wrote = true
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	_ = f.rc.Flush() // a writer that cannot flush still gets the bytes
	return n, nil
}

func (f *flushWriter) started() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wrote
}
