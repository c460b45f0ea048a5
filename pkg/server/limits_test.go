package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestIsStreaming(t *testing.T) {
	for target, want := range map[string]bool{
		"/exec/ns/p/c?command=sh":               true,
		"/attach/ns/p/uid/c":                    true,
		"/portForward/ns/p":                     true,
		"/containerLogs/ns/p/c?follow=true":     true,
		"/containerLogs/ns/p/c?follow=1":        true,
		"/containerLogs/ns/p/c":                 false,
		"/containerLogs/ns/p/c?follow=false":    false,
		"/run/ns/p/c?command=ls":                false,
		"/stats/summary":                        false,
		"/pods":                                 false,
		"/execute/ns/p/c":                       false,
		"/stats/exec/x?follow=true":             false,
		"/containerLogsX/ns/p/c?follow=true":    false,
		"/healthz":                              false,
		"/exec":                                 true,
		"/portForward/ns/p?follow=true&port=80": true,
	} {
		if got := isStreaming(httptest.NewRequest(http.MethodGet, target, nil)); got != want {
			t.Errorf("isStreaming(%s) = %v, want %v", target, got, want)
		}
	}
}

func TestWithLimitsBoundsBodies(t *testing.T) {
	var readErr error
	h := withLimits(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, readErr = io.Copy(io.Discard, r.Body)
	}))
	big := strings.NewReader(strings.Repeat("x", maxBodyBytes+1))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/run/ns/p/c?command=ls", big))
	var tooBig *http.MaxBytesError
	if !errors.As(readErr, &tooBig) {
		t.Errorf("reading an oversized body: %v, want a MaxBytesError", readErr)
	}
	small := strings.NewReader(strings.Repeat("x", maxBodyBytes))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/stats/summary", small))
	if readErr != nil {
		t.Errorf("reading a body within the limit: %v", readErr)
	}
}

func TestServerRefusesHugeHeaders(t *testing.T) {
	s := NewServer("test", "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	url, stop := startServer(t, s)
	defer stop()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		// The server may answer and close before all of it is written.
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 2*maxHeaderBytes))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", resp.StatusCode)
	}
	// And it still serves the next client.
	r, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("after a huge header: status %d", r.StatusCode)
	}
}

// TestDeadlinesSpareStreamingRoutes puts the write deadline of ordinary
// requests in the past: their answers cannot be written, while exec,
// attach, port-forward and followed logs, which get no deadline, are
// answered in full.
func TestDeadlinesSpareStreamingRoutes(t *testing.T) {
	old := writeTimeout
	writeTimeout = -time.Hour
	t.Cleanup(func() { writeTimeout = old })
	s := NewServer("test", "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "answer")
	}))
	url, stop := startServer(t, s)
	defer stop()
	for target, streaming := range map[string]bool{
		"/exec/ns/p/c?command=sh":           true,
		"/attach/ns/p/c":                    true,
		"/portForward/ns/p":                 true,
		"/containerLogs/ns/p/c?follow=true": true,
		"/containerLogs/ns/p/c":             false,
		"/pods":                             false,
	} {
		// A fresh connection each: one whose write failed is closed.
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(url + target)
		served := err == nil
		if served {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			served = string(body) == "answer"
		}
		if served != streaming {
			t.Errorf("%s: answered %v (err %v), want %v", target, served, err, streaming)
		}
	}
}

func TestWithoutDebuggingHandlers(t *testing.T) {
	h := APIRoutes(newFakeNode().deps().WithoutDebuggingHandlers())
	for target, want := range map[string]int{
		"GET /containerLogs/default/web-node-a/app":             http.StatusNotImplemented,
		"POST /exec/default/web-node-a/app?command=ls&output=1": http.StatusNotImplemented,
		"POST /attach/default/web-node-a/app?output=1":          http.StatusNotImplemented,
		"POST /portForward/default/web-node-a":                  http.StatusNotImplemented,
		"POST /run/default/web-node-a/app?command=ls":           http.StatusNotImplemented,
		"GET /pods":          http.StatusOK,
		"GET /stats/summary": http.StatusOK,
	} {
		method, path, _ := strings.Cut(target, " ")
		if code, body := get(t, h, method, path); code != want {
			t.Errorf("%s: %d %q, want %d", target, code, body, want)
		}
	}
}
