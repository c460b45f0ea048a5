package server

import (
	"net/http"
	"strings"
	"time"
)

// Limits that keep a server usable when clients misbehave. They apply to
// every server nodelet runs (node API, read-only, healthz).
const (
	// readHeaderTimeout bounds how long a client may take to send headers,
	// so slow-loris clients cannot hold connections.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes keep-alive connections nobody uses.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes caps request line plus headers (upstream's 1 MiB);
	// larger requests get 431.
	maxHeaderBytes = 1 << 20
	// maxBodyBytes caps a request body. No endpoint needs one: exec,
	// attach and port-forward take their streams over the upgraded
	// connection, not the body.
	maxBodyBytes = 64 << 10
)

// Per-request deadlines of ordinary routes; variables so that tests can
// put them in the past.
var (
	// bodyReadTimeout bounds reading a request body.
	bodyReadTimeout = time.Minute
	// writeTimeout bounds writing the answer; a summary on a loaded node
	// is the slowest of them.
	writeTimeout = 2 * time.Minute
)

// streamingRoots are the path roots whose requests last as long as the
// client wants: exec, attach and port-forward sessions (the connection is
// handed to the runtime) and followed logs.
var streamingRoots = map[string]bool{"exec": true, "attach": true, "portForward": true}

// isStreaming reports whether r is a long-lived request that the read and
// write deadlines must not cut.
func isStreaming(r *http.Request) bool {
	root, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if streamingRoots[root] {
		return true
	}
	return root == "containerLogs" && isTrue(r.URL.Query().Get("follow"))
}

func isTrue(s string) bool { return s == "true" || s == "1" }

// withLimits bounds each request: ordinary ones get a body size limit and
// read and write deadlines, set per request (http.Server's WriteTimeout
// would cut exec sessions and followed logs too); streaming ones get
// neither, and their connection deadlines are cleared.
func withLimits(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if isStreaming(r) {
			// Clear what the server set for reading the headers.
			_ = rc.SetReadDeadline(time.Time{})
			_ = rc.SetWriteDeadline(time.Time{})
			h.ServeHTTP(w, r)
			return
		}
		now := time.Now()
		// Errors mean the writer has no connection (tests' recorders):
		// nothing to bound then.
		_ = rc.SetReadDeadline(now.Add(bodyReadTimeout))
		_ = rc.SetWriteDeadline(now.Add(writeTimeout))
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		h.ServeHTTP(w, r)
	})
}
