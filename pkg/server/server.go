package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// shutdownTimeout bounds the graceful drain (see limits.go for the rest).
const (
	// shutdownTimeout bounds the graceful drain when the context ends;
	// connections still open after it are closed.
	shutdownTimeout = 5 * time.Second
)

// Server serves one handler on one address. Call Listen to bind (and Addr to
// learn the bound address, e.g. with port 0), then Run; Run binds by itself if
// Listen was not called.
type Server struct {
	name    string
	addr    string
	handler http.Handler
	tls     *tls.Config

	mu      sync.Mutex
	ln      net.Listener
	running bool
}

// NewServer returns a server named name (used in errors and logs) that will
// serve handler on addr ("host:port").
func NewServer(name, addr string, handler http.Handler) *Server {
	return &Server{name: name, addr: addr, handler: handler}
}

// NewTLSServer is NewServer serving HTTPS with cfg.
func NewTLSServer(name, addr string, handler http.Handler, cfg *tls.Config) *Server {
	return &Server{name: name, addr: addr, handler: handler, tls: cfg}
}

// Name is the name given to NewServer.
func (s *Server) Name() string { return s.name }

// Handler is the handler the server serves, for tests and for embedding.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the address. An address already in use is reported here, so
// the caller can fail startup before anything else runs.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return fmt.Errorf("%s server: already listening on %s", s.name, s.ln.Addr())
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("%s server: listening on %s: %w", s.name, s.addr, err)
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close releases the listener bound by Listen when Run will not be called,
// e.g. because a later step of startup failed. A running server is stopped by
// cancelling Run's context instead.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return fmt.Errorf("%s server: running; cancel its context to stop it", s.name)
	}
	if s.ln == nil {
		return nil
	}
	err := s.ln.Close()
	s.ln = nil
	if err != nil {
		return fmt.Errorf("%s server: closing listener: %w", s.name, err)
	}
	return nil
}

// Run serves until ctx ends, then shuts down gracefully: it stops accepting,
// waits up to a few seconds for requests in flight, and closes the listener.
// It returns nil after a shutdown caused by ctx, and an error if binding or
// serving fails. A Server runs once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return fmt.Errorf("%s server: already running", s.name)
	}
	s.running = true
	bound := s.ln != nil
	s.mu.Unlock()
	if !bound {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()

	srv := &http.Server{
		Handler:           withLimits(s.handler),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// Requests see ctx's cancellation, so long handlers stop on shutdown.
		BaseContext: func(net.Listener) context.Context { return ctx },
		// Handshake failures of port scanners are not worth a log line each.
		ErrorLog: quietLog,
	}
	klog.InfoS("Serving", "server", s.name, "address", ln.Addr().String())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		// Serve only returns early on a listener failure.
		return fmt.Errorf("%s server on %s: %w", s.name, ln.Addr(), err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		klog.InfoS("Graceful shutdown timed out, closing connections", "server", s.name, "err", err)
		_ = srv.Close() // best effort: the drain already failed
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s server on %s: %w", s.name, ln.Addr(), err)
	}
	klog.InfoS("Stopped serving", "server", s.name)
	return nil
}

// quietLog is net/http's error log: TLS handshake failures (scanners,
// clients that distrust the self-signed certificate) go to verbose logs,
// anything else is an error.
var quietLog = log.New(httpErrorWriter{}, "", 0)

type httpErrorWriter struct{}

func (httpErrorWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "TLS handshake error") {
		klog.V(4).InfoS("HTTP server", "msg", msg)
	} else {
		klog.ErrorS(nil, "HTTP server", "msg", msg)
	}
	return len(p), nil
}
