package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/poll"
)

// startServer listens on a free port and runs s until the test ends.
func startServer(t *testing.T, s *Server) (url string, stop func() error) {
	t.Helper()
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	return "http://" + s.Addr().String(), stop
}

func TestServerServesAndStops(t *testing.T) {
	s := NewHealthzServer("127.0.0.1:0")
	if s.Addr() != nil {
		t.Errorf("Addr before Listen = %v, want nil", s.Addr())
	}
	url, stop := startServer(t, s)

	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("GET /healthz = %d %q", resp.StatusCode, body)
	}

	if err := stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("listener still accepting after shutdown")
	}
}

func TestServerPortInUse(t *testing.T) {
	first := NewHealthzServer("127.0.0.1:0")
	if err := first.Listen(); err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	second := NewHealthzServer(first.Addr().String())
	err := second.Run(context.Background())
	if err == nil {
		t.Fatal("second server on the same port: want error")
	}
	for _, want := range []string{"healthz server: listening on " + first.Addr().String(), "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestServerRunListensItself(t *testing.T) {
	s := NewReadOnlyServer("127.0.0.1:0", APIDeps{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	poll.Eventually(t, "Run to bind", func() bool { return s.Addr() != nil })
	resp, err := http.Get("http://" + s.Addr().String() + "/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("/pods without dependency = %d, want 501", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run = %v, want already running", err)
	}
}

func TestServerDrainsInFlightRequests(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "finished")
	})
	url, stop := startServer(t, NewServer("test", "127.0.0.1:0", mux))

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-started

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// Shutdown has begun, the request in flight, once the listener is
	// closed.
	addr := strings.TrimPrefix(url, "http://")
	poll.Eventually(t, "listener closed by Shutdown", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	close(release)

	if r := <-got; r.err != nil || r.body != "finished" {
		t.Errorf("in-flight request = %q, %v; want it to finish", r.body, r.err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestServerClose(t *testing.T) {
	s := NewHealthzServer("127.0.0.1:0")
	if err := s.Close(); err != nil {
		t.Errorf("Close before Listen = %v", err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr().String()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The port is free again.
	again := NewHealthzServer(addr)
	if err := again.Listen(); err != nil {
		t.Errorf("re-listening after Close: %v", err)
	}
	_ = again.Close()
}
