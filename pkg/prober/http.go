package prober

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime/lifecycle"
)

// httpRequest builds the GET of an httpGet probe: host defaults to the pod
// IP, a Host header sets the request's host, and User-Agent and Accept get
// upstream's defaults unless the probe sets them (an Accept set empty is
// dropped).
func httpRequest(ctx context.Context, g *v1.HTTPGetAction, t probeTarget, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = t.podIP
	}
	port, err := lifecycle.ResolvePort(g.Port, t.container)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		// A path that does not parse is passed on as it is, as upstream.
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("probe request: %w", err)
	}
	header := http.Header{}
	for _, h := range g.HTTPHeaders {
		header.Add(h.Name, h.Value)
	}
	if _, ok := header["User-Agent"]; !ok {
		header.Set("User-Agent", userAgent)
	}
	if _, ok := header["Accept"]; !ok {
		header.Set("Accept", "*/*")
	} else if header.Get("Accept") == "" {
		header.Del("Accept")
	}
	req.Header = header
	req.Host = header.Get("Host")
	return req, nil
}

func (h handlers) runHTTP(ctx context.Context, g *v1.HTTPGetAction, t probeTarget, timeout time.Duration) (outcome, string, error) {
	req, err := httpRequest(ctx, g, t, h.userAgent)
	if err != nil {
		return outcomeFailure, "", err
	}
	// One deadline for connecting, redirects and reading the body: an
	// endless body costs the timeout at most (and only 10 KiB of it is read).
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	get := getOnce
	if g.Protocol != nil && *g.Protocol == v1.HTTPProtocolHTTP2 && req.URL.Scheme == "http" {
		get = getOnceH2C
	}
	res, b, err := getFollowingSameHost(ctx, req, get)
	if err != nil {
		// The connection's deadline is the context's, and either may fire
		// first: both are the probe's timeout.
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("%w (Client.Timeout exceeded while awaiting headers)", context.DeadlineExceeded)
		}
		return outcomeFailure, fmt.Sprintf("Get %q: %v", req.URL.String(), err), nil
	}
	body := string(b)
	switch {
	case res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusMultipleChoices:
		return outcomeSuccess, body, nil
	case res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest:
		return outcomeWarning, "Probe terminated redirects, Response body: " + body, nil
	}
	// The body stays out of the message: events are readable by more
	// people than the pod's responses (upstream #99425).
	return outcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}

// getter sends one request and reads at most maxOutput bytes of the body.
type getter func(ctx context.Context, req *http.Request) (*http.Response, []byte, error)

// getFollowingSameHost GETs req with get, following redirects to the same
// host (at most 10); a redirect to another host is not followed: that
// response is the answer.
func getFollowingSameHost(ctx context.Context, req *http.Request, get getter) (*http.Response, []byte, error) {
	first := req.URL.Hostname()
	for redirects := 0; ; redirects++ {
		res, body, err := get(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		loc := res.Header.Get("Location")
		if res.StatusCode < 300 || res.StatusCode >= 400 || res.StatusCode == http.StatusNotModified || loc == "" {
			return res, body, nil
		}
		next, err := req.URL.Parse(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to parse Location header %q: %w", loc, err)
		}
		if next.Hostname() != first {
			return res, body, nil
		}
		if redirects >= 9 {
			return nil, nil, errors.New("stopped after 10 redirects")
		}
		nreq := req.Clone(ctx)
		nreq.URL = next
		if next.Host != req.URL.Host {
			nreq.Host = ""
		}
		req = nreq
	}
}

// getOnce sends req on a connection of its own, closed after at most
// maxOutput bytes of the body. A probe's connection is never reused (as
// upstream), so the shared machinery of http.Transport - a pool, two
// goroutines per connection - would only cost CPU on every probe.
func getOnce(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	port := req.URL.Port()
	if port == "" {
		port = "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
	}
	conn, err := probeDialer().DialContext(ctx, "tcp", net.JoinHostPort(req.URL.Hostname(), port))
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(d); err != nil {
			return nil, nil, err
		}
	}
	// The deadline bounds every read and write; cancellation must too.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	switch req.URL.Scheme {
	case "http":
	case "https":
		//nolint:gosec // upstream probes do not verify certificates
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: req.URL.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, nil, err
		}
		conn = tc
	default:
		return nil, nil, fmt.Errorf("unsupported protocol scheme %q", req.URL.Scheme)
	}
	req.Close = true // "Connection: close"
	if err := req.Write(conn); err != nil {
		return nil, nil, err
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, nil, err
	}
	// Not res.Body.Close: it would drain the rest of the body (endless,
	// maybe); closing the connection (deferred) drops it.
	body, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return nil, nil, err
	}
	return res, body, nil
}

// getOnceH2C sends req as HTTP/2 over cleartext with prior knowledge
// (protocol: HTTP2 on an http probe, upstream's h2c probes), on a
// connection of its own that is closed afterwards.
func getOnceH2C(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	tr := &http.Transport{
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
		DialContext:        probeDialer().DialContext,
		Protocols:          new(http.Protocols),
	}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	res, err := tr.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	// Closing an HTTP/2 body resets the stream: nothing more is read.
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return nil, nil, err
	}
	return res, body, nil
}
