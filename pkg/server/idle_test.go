package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// hijackable is a ResponseWriter over one end of a pipe.
type hijackable struct {
	http.ResponseWriter
	conn net.Conn
}

func (h hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.conn, bufio.NewReadWriter(bufio.NewReader(h.conn), bufio.NewWriter(h.conn)), nil
}

func TestStreamIdleTimeoutClosesIdleSessions(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	w := withStreamIdleTimeout(hijackable{ResponseWriter: newRecorder(), conn: server}, time.Millisecond)
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Nobody sends anything: the session's read ends with a timeout.
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle read: %v, want a deadline error", err)
	}
}

func TestStreamIdleTimeoutKeepsActiveSessions(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	w := withStreamIdleTimeout(hijackable{ResponseWriter: newRecorder(), conn: server}, time.Hour)
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = client.Write([]byte("ping")) }()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q %v", buf, err)
	}
	go func() { _, _ = io.ReadFull(client, buf) }()
	if _, err := c.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}

	// No timeout: the writer is left as it is.
	plain := hijackable{ResponseWriter: newRecorder(), conn: server}
	if got := withStreamIdleTimeout(plain, 0); got != http.ResponseWriter(plain) {
		t.Error("a zero timeout wrapped the writer")
	}
}
