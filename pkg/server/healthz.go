package server

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/klog/v2"
)

// HealthCheck is one named health condition. Check returns nil when healthy,
// or an error saying what is wrong (e.g. "pleg was last seen active 4m0s ago;
// threshold is 3m0s"). Checks run on every /healthz request, so they must be
// cheap and must not block.
type HealthCheck struct {
	Name  string
	Check func() error
}

// pingCheck is always installed: it passes whenever the process answers
// HTTP at all, as upstream's /healthz/ping.
var pingCheck = HealthCheck{Name: "ping", Check: func() error { return nil }}

// run reports the check's result; a check without a function fails, so a
// wiring mistake shows up as unhealthy rather than as silently healthy.
func (c HealthCheck) run() error {
	if c.Check == nil {
		return fmt.Errorf("check %q has no function: %w", c.Name, ErrNotImplemented)
	}
	return c.Check()
}

// NewHealthzServer returns the healthz server: GET /healthz answers 200 "ok"
// when every check passes and 500 listing the failing checks otherwise;
// GET /healthz/{name} runs one check.
func NewHealthzServer(addr string, checks ...HealthCheck) *Server {
	return NewServer("healthz", addr, HealthzHandler(checks...))
}

// HealthzHandler is the healthz server's handler.
func HealthzHandler(checks ...HealthCheck) http.Handler {
	mux := http.NewServeMux()
	InstallHealthz(mux, checks...)
	return mux
}

// InstallHealthz adds /healthz and /healthz/{name} to mux, with the ping
// check in front of checks. Other servers (read-only, node API) share it.
func InstallHealthz(mux *http.ServeMux, checks ...HealthCheck) {
	all := append([]HealthCheck{pingCheck}, checks...)
	mux.Handle("GET /healthz", healthzAll(all))
	mux.Handle("GET /healthz/{name}", healthzOne(all))
}

// healthzAll answers "ok", or with ?verbose or on failure one line per check
// in upstream's format:
//
//	[+]ping ok
//	[-]pleg failed: pleg was last seen active 4m0s ago
//	healthz check failed
func healthzAll(checks []HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		failed := false
		for _, c := range checks {
			if err := c.run(); err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.Name, err)
				klog.V(2).InfoS("Health check failed", "check", c.Name, "err", err)
				continue
			}
			fmt.Fprintf(&b, "[+]%s ok\n", c.Name)
		}
		_, verbose := r.URL.Query()["verbose"]
		switch {
		case failed:
			b.WriteString("healthz check failed\n")
			writeText(w, http.StatusInternalServerError, b.String())
		case verbose:
			b.WriteString("healthz check passed\n")
			writeText(w, http.StatusOK, b.String())
		default:
			writeText(w, http.StatusOK, "ok")
		}
	})
}

// healthzOne runs the check named in the path.
func healthzOne(checks []HealthCheck) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("name")
		for _, c := range checks {
			if c.Name != name {
				continue
			}
			if err := c.run(); err != nil {
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("[-]%s failed: %v\n", name, err))
				return nil
			}
			writeText(w, http.StatusOK, "ok")
			return nil
		}
		return fmt.Errorf("health check %q: %w", name, ErrNotFound)
	})
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body)) // a client that went away is not our error
}

// InstallReadyz adds /readyz and /readyz/{name}, answering like /healthz.
// Readiness (every config source seen) is kept apart from health so that a
// manifest URL that never answers does not get nodelet restarted by a
// liveness probe.
func InstallReadyz(mux *http.ServeMux, checks ...HealthCheck) {
	all := append([]HealthCheck{pingCheck}, checks...)
	mux.Handle("GET /readyz", healthzAll(all))
	mux.Handle("GET /readyz/{name}", healthzOne(all))
}
