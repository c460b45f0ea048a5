package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
)

const testNode = "node-a"

// authFixture is a node API on loopback with a fake API server behind its
// TokenReviews and SubjectAccessReviews.
type authFixture struct {
	url      string
	ca       *testCA
	mu       sync.Mutex
	reviews  int
	sars     []authorizationv1.SubjectAccessReviewSpec
	allow    func(spec authorizationv1.SubjectAccessReviewSpec) bool
	tokenErr error
}

var testTokens = map[string]authenticationv1.UserInfo{
	"admin-token": {Username: "admin", UID: "u-admin", Groups: []string{"system:masters", GroupAuthenticated}},
	"alice-token": {Username: "alice", UID: "u-alice", Groups: []string{GroupAuthenticated}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}},
}

func (f *authFixture) tokenReview(_ context.Context, r *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reviews++
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	out := r.DeepCopy()
	if u, ok := testTokens[r.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
	}
	return out, nil
}

func (f *authFixture) subjectAccessReview(_ context.Context, r *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sars = append(f.sars, r.Spec)
	out := r.DeepCopy()
	out.Status.Allowed = f.allow(r.Spec)
	if !out.Status.Allowed {
		out.Status.Reason = "no RBAC policy matched"
	}
	return out, nil
}

func (f *authFixture) takeSARs() []authorizationv1.SubjectAccessReviewSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sars
	f.sars = nil
	return s
}

// onlyMasters allows system:masters, like the test cluster's RBAC.
func onlyMasters(spec authorizationv1.SubjectAccessReviewSpec) bool {
	for _, g := range spec.Groups {
		if g == "system:masters" {
			return true
		}
	}
	return false
}

func startAuthFixture(t *testing.T, anonymous bool, deps APIDeps) *authFixture {
	t.Helper()
	f := &authFixture{ca: newTestCA(t, "client-ca"), allow: onlyMasters}
	serving := newTestCA(t, "serving-ca").issue(t, "node-a", nil, x509.ExtKeyUsageServerAuth)
	auth := Auth{
		NodeName: testNode,
		Authenticators: Authenticators{
			AllowAnonymous: anonymous,
			List: []Authenticator{
				X509Authenticator(f.ca.pool),
				TokenAuthenticator(f.tokenReview, CacheOptions{}),
			},
		},
		Authorizer: SubjectAccessReviewAuthorizer(f.subjectAccessReview, CacheOptions{}),
	}
	s := NewAPIServer("127.0.0.1:0", TLSConfig(serving, f.ca.pool), auth, deps)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	f.url = "https://" + s.Addr().String()
	return f
}

// client returns an HTTPS client presenting certs, trusting any server.
func testClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // the node serves a self-signed certificate
			Certificates:       certs,
		}},
	}
}

func do(t *testing.T, c *http.Client, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// endpoints are every route of the node API, with the node subresources
// an authorizer is asked about, in order.
var endpoints = []struct {
	method, path string
	verb         string
	subresources []string
}{
	{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
	{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
	{"GET", "/pods", "get", []string{"pods", "proxy"}},
	{"GET", "/metrics", "get", []string{"metrics"}},
	{"GET", "/metrics/resource", "get", []string{"metrics"}},
	{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
	{"GET", "/metrics/probes", "get", []string{"metrics"}},
	{"GET", "/stats/summary", "get", []string{"stats"}},
	{"POST", "/stats/summary", "create", []string{"stats"}},
	{"GET", "/stats/default/web/uid-1/c", "get", []string{"stats"}},
	{"GET", "/stats/web/c", "get", []string{"stats"}},
	{"GET", "/containerLogs/default/web/c?follow=true", "get", []string{"proxy"}},
	{"POST", "/exec/default/web/c?command=ls&output=1", "create", []string{"proxy"}},
	{"GET", "/exec/default/web/uid-1/c?command=ls&output=1", "get", []string{"proxy"}},
	{"POST", "/attach/default/web/c?output=1", "create", []string{"proxy"}},
	{"POST", "/portForward/default/web", "create", []string{"proxy"}},
	{"POST", "/portForward/default/web/uid-1", "create", []string{"proxy"}},
	{"POST", "/run/default/web/c?command=ls", "create", []string{"proxy"}},
	{"GET", "/logs/", "get", []string{"log"}},
	{"DELETE", "/no/such/path", "delete", []string{"proxy"}},
}

func TestNodeAPIAuthEveryEndpoint(t *testing.T) {
	f := startAuthFixture(t, false, APIDeps{})
	otherCA := newTestCA(t, "other-ca")

	anon := testClient()
	admin := testClient(f.ca.issue(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, x509.ExtKeyUsageClientAuth))
	bob := testClient(f.ca.issue(t, "bob", []string{"devs"}, x509.ExtKeyUsageClientAuth))
	forged := testClient(otherCA.issue(t, "admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth))
	serverCert := testClient(f.ca.issue(t, "admin", []string{"system:masters"}, x509.ExtKeyUsageServerAuth))

	for _, ep := range endpoints {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			url := f.url + ep.path
			unauthenticated := []struct {
				name   string
				client *http.Client
				token  string
			}{
				{"no credentials", anon, ""},
				{"unknown token", anon, "guess"},
				{"certificate from another CA", forged, ""},
				{"certificate without client auth usage", serverCert, ""},
			}
			for _, u := range unauthenticated {
				if code, body := do(t, u.client, ep.method, url, u.token); code != 401 {
					t.Errorf("%s: code %d, want 401 (%s)", u.name, code, body)
				}
			}
			if sars := f.takeSARs(); len(sars) != 0 {
				t.Errorf("unauthenticated requests reached the authorizer: %v", sars)
			}

			for _, who := range []struct {
				name   string
				client *http.Client
				token  string
				user   string
			}{
				{"certificate", bob, "", "bob"},
				{"token", anon, "alice-token", "alice"},
			} {
				code, body := do(t, who.client, ep.method, url, who.token)
				if code != 403 {
					t.Errorf("%s without permission: code %d, want 403 (%s)", who.name, code, body)
				}
				if !strings.HasPrefix(body, "Forbidden (user="+who.user+", verb="+ep.verb+", resource=nodes, subresource=") {
					t.Errorf("%s: body %q", who.name, body)
				}
				var got []string
				for _, s := range f.takeSARs() {
					ra := s.ResourceAttributes
					if s.User != who.user || ra.Verb != ep.verb || ra.Resource != "nodes" || ra.Name != testNode || ra.Version != "v1" || ra.Group != "" || ra.Namespace != "" {
						t.Errorf("%s: review %+v %+v", who.name, s, ra)
					}
					got = append(got, ra.Subresource)
				}
				if !reflect.DeepEqual(got, ep.subresources) {
					t.Errorf("%s: reviewed subresources %v, want %v", who.name, got, ep.subresources)
				}
			}

			for _, ok := range []struct {
				name   string
				client *http.Client
				token  string
			}{
				{"master certificate", admin, ""},
				{"master token", anon, "admin-token"},
				// The first authenticator that accepts decides, as upstream's
				// union: bad credentials of another kind do not matter then.
				{"master token with a forged certificate", forged, "admin-token"},
				{"master certificate with a bad token", admin, "guess"},
			} {
				if code, body := do(t, ok.client, ep.method, url, ok.token); code == 401 || code == 403 {
					t.Errorf("%s: code %d, want it through (%s)", ok.name, code, body)
				}
			}
			f.takeSARs()
		})
	}
}

func TestNodeAPIAnonymous(t *testing.T) {
	f := startAuthFixture(t, true, APIDeps{})
	f.allow = func(spec authorizationv1.SubjectAccessReviewSpec) bool {
		return spec.User == UserAnonymous && spec.ResourceAttributes.Subresource == "healthz"
	}
	c := testClient()
	if code, body := do(t, c, "GET", f.url+"/healthz", ""); code != 200 {
		t.Errorf("anonymous /healthz: %d %s", code, body)
	}
	if code, _ := do(t, c, "GET", f.url+"/pods", ""); code != 403 {
		t.Errorf("anonymous /pods: %d, want 403", code)
	}
	// A token that was sent and refused is not downgraded to anonymous.
	if code, _ := do(t, c, "GET", f.url+"/healthz", "guess"); code != 401 {
		t.Errorf("bad token with anonymous allowed: %d, want 401", code)
	}
	sars := f.takeSARs()
	if len(sars) == 0 || !reflect.DeepEqual(sars[0].Groups, []string{GroupUnauthenticated}) {
		t.Errorf("anonymous reviews: %+v", sars)
	}
}

func TestTokenAuthenticatorCachesAndStripsHeader(t *testing.T) {
	f := &authFixture{}
	authn := TokenAuthenticator(f.tokenReview, CacheOptions{AllowTTL: time.Minute, DenyTTL: time.Minute})
	for i := 0; i < 3; i++ {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer alice-token")
		u, ok, err := authn.AuthenticateRequest(r)
		if !ok || err != nil || u.Name != "alice" || u.Extra["scopes"][0] != "a" {
			t.Fatalf("alice: %v %v %v", u, ok, err)
		}
		if r.Header.Get("Authorization") != "" {
			t.Error("Authorization header kept after authentication")
		}
		r, _ = http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer nope")
		if _, ok, err := authn.AuthenticateRequest(r); ok || !errors.Is(err, errInvalidCredentials) {
			t.Fatalf("bad token: %v %v", ok, err)
		}
	}
	if f.reviews != 2 {
		t.Errorf("%d token reviews for 6 requests with 2 tokens, want 2", f.reviews)
	}

	// An API server that does not answer is not cached and is not "invalid".
	f.tokenErr = errors.New("connection refused")
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer other")
	if _, ok, err := authn.AuthenticateRequest(r); ok || err == nil || errors.Is(err, errInvalidCredentials) {
		t.Errorf("review failure: %v %v", ok, err)
	}
	// No header, a Basic header: not this authenticator's business.
	for _, h := range []string{"", "Basic YWRtaW46YWRtaW4=", "Bearer "} {
		r, _ := http.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		if _, ok, err := authn.AuthenticateRequest(r); ok || err != nil {
			t.Errorf("header %q: %v %v", h, ok, err)
		}
	}
}

func TestSubjectAccessReviewCache(t *testing.T) {
	f := &authFixture{allow: onlyMasters}
	authz := SubjectAccessReviewAuthorizer(f.subjectAccessReview, CacheOptions{AllowTTL: time.Minute, DenyTTL: time.Minute})
	admin := &UserInfo{Name: "admin", Groups: []string{"system:masters"}}
	alice := &UserInfo{Name: "alice"}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if ok, _, err := authz.Authorize(ctx, Attributes{User: admin, Verb: "get", Resource: "nodes", Subresource: "stats", Name: "n"}); !ok || err != nil {
			t.Fatalf("admin: %v %v", ok, err)
		}
		ok, reason, err := authz.Authorize(ctx, Attributes{User: alice, Verb: "get", Resource: "nodes", Subresource: "stats", Name: "n"})
		if ok || err != nil || reason != "no RBAC policy matched" {
			t.Fatalf("alice: %v %q %v", ok, reason, err)
		}
	}
	// Another subresource is another question.
	authz.Authorize(ctx, Attributes{User: admin, Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "n"})
	if n := len(f.takeSARs()); n != 3 {
		t.Errorf("%d reviews, want 3", n)
	}
}

func TestNodeAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subs         []string
	}{
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/statsz", "get", []string{"proxy"}},
		{"HEAD", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"PUT", "/spec/", "update", []string{"spec"}},
		{"PATCH", "/checkpoint/ns/p/c", "patch", []string{"checkpoint"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/containerLogs/ns/p/c", "get", []string{"proxy"}},
		{"OPTIONS", "/pods", "", []string{"pods", "proxy"}},
	}
	for _, tc := range tests {
		r, _ := http.NewRequest(tc.method, tc.path, nil)
		var subs []string
		for _, a := range NodeAttributes(&UserInfo{Name: "u"}, r, "n") {
			if a.Verb != tc.verb || a.Resource != "nodes" || a.Name != "n" {
				t.Errorf("%s %s: %+v", tc.method, tc.path, a)
			}
			subs = append(subs, a.Subresource)
		}
		if !reflect.DeepEqual(subs, tc.subs) {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.path, subs, tc.subs)
		}
	}
}

func TestAuthorizerErrorIs500(t *testing.T) {
	h := WithAuth(http.NotFoundHandler(), Auth{
		Authenticators: Authenticators{AllowAnonymous: true},
		Authorizer: AuthorizerFunc(func(context.Context, Attributes) (bool, string, error) {
			return false, "", errors.New("API server unreachable")
		}),
	})
	rec := newRecorder()
	h.ServeHTTP(rec, mustRequest("GET", "/pods"))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "authorization error") {
		t.Errorf("%d %q", rec.Code, rec.Body)
	}
	// No authorizer at all fails closed.
	h = WithAuth(http.NotFoundHandler(), Auth{Authenticators: Authenticators{AllowAnonymous: true}})
	rec = newRecorder()
	h.ServeHTTP(rec, mustRequest("GET", "/pods"))
	if rec.Code != 403 {
		t.Errorf("no authorizer: %d", rec.Code)
	}
}
