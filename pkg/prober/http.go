package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime/lifecycle"
)

// newTransport is shared by all HTTP probes: no keep-alive (each probe is
// a fresh connection, as upstream), no proxy from the environment, no
// certificate verification (probes check liveness, not identity), and no
// transparent decompression.
func newTransport() *http.Transport {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream probes do not verify
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil,
		DialContext:         probeDialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

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

// sameHostRedirects follows redirects to the same host (at most 10) and
// stops at one to another host: the redirect response itself is then the
// answer, which counts as a success with a warning.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func (h handlers) runHTTP(ctx context.Context, g *v1.HTTPGetAction, t probeTarget, timeout time.Duration) (outcome, string, error) {
	req, err := httpRequest(ctx, g, t, h.userAgent)
	if err != nil {
		return outcomeFailure, "", err
	}
	// The client's timeout covers reading the body: an endless body costs
	// the timeout at most (and only 10 KiB of it is read).
	client := &http.Client{Timeout: timeout, Transport: h.tr, CheckRedirect: sameHostRedirects}
	res, err := client.Do(req)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return outcomeFailure, err.Error(), nil
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
