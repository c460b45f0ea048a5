package server

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// idleTimeoutWriter hands out its connection, when hijacked for an exec,
// attach or port-forward session, wrapped so that the session is closed
// after timeout without a byte in either direction
// (--streaming-connection-idle-timeout).
type idleTimeoutWriter struct {
	http.ResponseWriter
	timeout time.Duration
}

// withStreamIdleTimeout wraps w for proxyStream; a timeout <= 0 (upstream's
// "no timeout") leaves w alone.
func withStreamIdleTimeout(w http.ResponseWriter, timeout time.Duration) http.ResponseWriter {
	if timeout <= 0 {
		return w
	}
	return &idleTimeoutWriter{ResponseWriter: w, timeout: timeout}
}

// Hijack is the wrapped writer's, with the connection wrapped.
func (w *idleTimeoutWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	c, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	ic := &idleConn{Conn: c, timeout: w.timeout}
	ic.touch()
	return ic, rw, nil
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (w *idleTimeoutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idleConn pushes both deadlines forward whenever bytes move either way, so
// a read waiting for stdin survives while output flows, and the
// connection ends only when the whole session is idle.
type idleConn struct {
	net.Conn
	timeout time.Duration
}

func (c *idleConn) touch() { _ = c.Conn.SetDeadline(time.Now().Add(c.timeout)) }

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}
