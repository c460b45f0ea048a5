package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/nodelet/nodelet/pkg/metrics"
)

// instrumentedRoots are the first path segments counted by name in
// nodelet_http_requests_total; any other path is counted as "other", so a
// scanner cannot blow up label values.
var instrumentedRoots = map[string]bool{
	"healthz": true, "pods": true, "metrics": true, "stats": true, "containerLogs": true,
	"exec": true, "attach": true, "portForward": true, "run": true,
}

// kubeletPathBuckets are upstream's path label values of
// kubelet_http_requests_*: the roots of the endpoints it serves, and
// "metrics/<name>" below /metrics.
var kubeletPathBuckets = map[string]bool{
	"allocatedPods": true, "attach": true, "checkpoint": true, "configz": true, "containerLogs": true,
	"debug": true, "exec": true, "flagz": true, "healthz": true, "logs": true, "metrics": true,
	"metrics/cadvisor": true, "metrics/probes": true, "metrics/resource": true, "pods": true,
	"portForward": true, "pprof": true, "run": true, "runningpods": true, "stats": true, "statusz": true,
}

// kubeletLongRunning are the path buckets upstream labels long_running.
// Its map spells "portforward" while the bucket is "portForward", so
// port-forwards count as not long-running there; nodelet keeps that, for
// the same series.
var kubeletLongRunning = map[string]bool{"exec": true, "attach": true, "portforward": true, "debug": true}

// Server types of kubelet_http_requests_*.
const (
	serverReadWrite = "readwrite"
	serverReadOnly  = "readonly"
)

// countKubeletHTTP counts every request as upstream's
// kubelet_http_requests_* do: counted and in flight from its start, its
// duration observed at its end, refused ones included.
func countKubeletHTTP(h http.Handler, serverType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket := kubeletPathBucket(r.URL.Path)
		req := metrics.StartHTTPRequest(methodLabel(r.Method), bucket, serverType, kubeletLongRunning[bucket])
		defer req.Done()
		h.ServeHTTP(w, r)
	})
}

// instrument counts every node API request by path root and status code
// (nodelet_http_requests_total), including the ones refused by
// authentication or authorization.
func instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		if rec.hijacked {
			code = http.StatusSwitchingProtocols
		}
		metrics.ObserveHTTPRequest(methodLabel(r.Method), pathRoot(r.URL.Path), strconv.Itoa(code))
	})
}

// methodLabel keeps the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	default:
		return "other"
	}
}

func pathRoot(p string) string {
	root, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if instrumentedRoots[root] {
		return root
	}
	return "other"
}

// kubeletPathBucket is upstream's path label: the first segment, or the
// first two below /metrics, when it is one of kubeletPathBuckets.
func kubeletPathBucket(p string) string {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	root := parts[0]
	if root == "metrics" && len(parts) > 1 {
		root += "/" + parts[1]
	}
	if kubeletPathBuckets[root] {
		return root
	}
	return "other"
}

// statusRecorder remembers the status code. It passes flushes and hijacks
// through: logs stream and exec takes over the connection.
type statusRecorder struct {
	http.ResponseWriter
	code     int
	hijacked bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("response writer cannot be hijacked")
	}
	s.hijacked = true
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
