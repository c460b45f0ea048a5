package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthz(t *testing.T) {
	healthy := HealthCheck{Name: "syncloop", Check: func() error { return nil }}
	stuck := HealthCheck{Name: "pleg", Check: func() error { return errors.New("pleg is not relisting") }}
	unwired := HealthCheck{Name: "unwired"}

	tests := []struct {
		name     string
		checks   []HealthCheck
		method   string
		path     string
		wantCode int
		wantBody []string // substrings
	}{
		{"all pass", []HealthCheck{healthy}, "GET", "/healthz", 200, []string{"ok"}},
		{"no checks", nil, "GET", "/healthz", 200, []string{"ok"}},
		{"verbose", []HealthCheck{healthy}, "GET", "/healthz?verbose", 200,
			[]string{"[+]ping ok\n[+]syncloop ok\nhealthz check passed\n"}},
		{"one fails", []HealthCheck{healthy, stuck}, "GET", "/healthz", 500,
			[]string{"[+]ping ok\n[+]syncloop ok\n[-]pleg failed: pleg is not relisting\nhealthz check failed\n"}},
		{"check without function fails", []HealthCheck{unwired}, "GET", "/healthz", 500, []string{`[-]unwired failed: check "unwired" has no function`}},
		{"single check ok", []HealthCheck{stuck}, "GET", "/healthz/ping", 200, []string{"ok"}},
		{"single check failing", []HealthCheck{stuck}, "GET", "/healthz/pleg", 500, []string{"[-]pleg failed: pleg is not relisting"}},
		{"unknown check", []HealthCheck{stuck}, "GET", "/healthz/nope", 404, []string{`health check "nope": not found`}},
		{"HEAD", []HealthCheck{healthy}, "HEAD", "/healthz", 200, nil},
		{"POST not allowed", []HealthCheck{healthy}, "POST", "/healthz", 405, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			HealthzHandler(tc.checks...).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantCode {
				t.Errorf("code = %d, want %d (body %q)", rec.Code, tc.wantCode, rec.Body)
			}
			for _, w := range tc.wantBody {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body %q does not contain %q", rec.Body, w)
				}
			}
			if tc.wantCode == 200 && tc.method == "GET" && rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q", rec.Header().Get("Content-Type"))
			}
		})
	}
}

func TestHealthzChecksRunPerRequest(t *testing.T) {
	var err error
	srv := httptest.NewServer(HealthzHandler(HealthCheck{Name: "flappy", Check: func() error { return err }}))
	defer srv.Close()
	get := func() int {
		resp, e := http.Get(srv.URL + "/healthz")
		if e != nil {
			t.Fatal(e)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Errorf("healthy: code %d", code)
	}
	err = errors.New("down")
	if code := get(); code != 500 {
		t.Errorf("unhealthy: code %d", code)
	}
}

func TestStatusFor(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{ErrNotImplemented, 501},
		{ErrNotFound, 404},
		{ErrBadRequest, 400},
		{errors.Join(errors.New("ctx"), ErrNotFound), 404},
		{errors.New("boom"), 500},
	}
	for _, tc := range tests {
		if got := statusFor(tc.err); got != tc.want {
			t.Errorf("statusFor(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
