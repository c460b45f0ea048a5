package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// saneStatus are the answers a hostile path or query may get: never a 5xx
// other than 501 (the fakes back every endpoint, so a 500 means a bug),
// never a panic.
var saneStatus = map[int]bool{
	http.StatusOK: true, http.StatusMovedPermanently: true, http.StatusTemporaryRedirect: true,
	http.StatusPermanentRedirect: true, http.StatusBadRequest: true, http.StatusUnauthorized: true,
	http.StatusForbidden: true, http.StatusNotFound: true, http.StatusMethodNotAllowed: true,
	http.StatusNotImplemented: true,
}

var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodHead, http.MethodDelete, "BREW"}

// FuzzAPIRoutes sends arbitrary paths and queries, with every method, to
// every route of the node API (behind the limits, metrics and auth layers
// of the real server) and of the read-only server.
func FuzzAPIRoutes(f *testing.F) {
	seeds := []struct{ path, query string }{
		{"/pods", ""},
		{"/healthz", "verbose"},
		{"/healthz/ping", ""},
		{"/metrics", ""},
		{"/metrics/resource", ""},
		{"/metrics/cadvisor", ""},
		{"/stats/summary", "only_cpu_and_memory=true"},
		{"/stats/app/app", ""},
		{"/stats/default/web-node-a/static-uid/app", ""},
		{"/containerLogs/default/web-node-a/app", "follow=true&tailLines=10&limitBytes=5&timestamps=1"},
		{"/containerLogs/default/web-node-a/app", "previous=true&sinceSeconds=-1"},
		{"/containerLogs/default/web-node-a/app", "sinceTime=2020-01-01T00:00:00Z&tailLines=-5"},
		{"/exec/default/web-node-a/app", "command=sh&input=1&output=1&tty=1"},
		{"/exec/default/web-node-a/static-uid/app", "command=ls&error=1"},
		{"/attach/prod/api/app", "output=1"},
		{"/portForward/default/web-node-a", "port=80,0,99999"},
		{"/portForward/default/web-node-a/static-uid", "port=%zz"},
		{"/run/default/web-node-a/app", "command=true"},
		{"/run/default/web-node-a/static-uid/app", "command="},
		{"/../../etc/passwd", ""},
		{"/containerLogs/%2e%2e/%2f/app", ""},
		{"/stats/" + strings.Repeat("a/", 300), ""},
		{"//exec///", "command"},
	}
	for i, s := range seeds {
		f.Add(uint8(i), s.path, s.query)
	}
	n := newFakeNode()
	n.streamURL = "http://127.0.0.1:1" // never dialed: a request without an upgrade is refused first
	deps := n.deps()
	deps.ExecSync = func(context.Context, string, []string, time.Duration) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("ok")}, nil
	}
	auth := Auth{NodeName: "node-a", Authenticators: Authenticators{AllowAnonymous: true}, Authorizer: AlwaysAllow}
	handlers := map[string]http.Handler{
		"node API":  withLimits(APIHandler(auth, deps)),
		"read-only": withLimits(ReadOnlyHandler(deps)),
	}
	f.Fuzz(func(t *testing.T, method uint8, path, query string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path // what the HTTP server hands over
		}
		for name, h := range handlers {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Method = fuzzMethods[int(method)%len(fuzzMethods)]
			r.URL = &url.URL{Path: path, RawQuery: query}
			r.RequestURI = r.URL.RequestURI()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if !saneStatus[rec.Code] {
				t.Errorf("%s: %s %s?%s = %d %q", name, r.Method, path, query, rec.Code, rec.Body.String())
			}
		}
	})
}
