package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// Well-known users and groups, as the API server names them.
const (
	UserAnonymous            = "system:anonymous"
	GroupUnauthenticated     = "system:unauthenticated"
	GroupAuthenticated       = "system:authenticated"
	defaultAuthnCacheTTL     = 2 * time.Minute
	defaultAuthnFailCacheTTL = 10 * time.Second
)

// errInvalidCredentials marks credentials that were presented and refused;
// they end authentication with 401 even when anonymous access is allowed,
// as upstream: a client that sent a wrong token wants to know.
var errInvalidCredentials = errors.New("invalid credentials")

// UserInfo is who made a request.
type UserInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Authenticator finds who made a request. ok is false when r carries no
// credentials of the kind it understands; err is non-nil when r carries such
// credentials and they are not valid.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user *UserInfo, ok bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*UserInfo, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	return f(r)
}

// X509Authenticator authenticates requests whose TLS client certificate
// chains to roots (--client-ca-file): the subject's CommonName is the user
// and its Organizations are the groups. The TLS listener only requests a
// certificate; verification happens here so that a bad certificate is a 401
// with a reason instead of a failed handshake.
func X509Authenticator(roots *x509.CertPool) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*UserInfo, bool, error) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return nil, false, nil
		}
		leaf := r.TLS.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: inter,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, false, fmt.Errorf("client certificate %q: %w: %v", leaf.Subject.CommonName, errInvalidCredentials, err)
		}
		if leaf.Subject.CommonName == "" {
			return nil, false, fmt.Errorf("client certificate without a common name: %w", errInvalidCredentials)
		}
		return &UserInfo{
			Name:   leaf.Subject.CommonName,
			Groups: withGroup(leaf.Subject.Organization, GroupAuthenticated),
		}, true, nil
	})
}

// TokenReviewFunc asks the API server about a bearer token
// (client.AuthenticationV1().TokenReviews().Create).
type TokenReviewFunc func(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)

// CacheOptions bound how long review answers are reused. Zero TTLs disable
// caching of that kind of answer.
type CacheOptions struct {
	// AllowTTL keeps positive answers (authenticated, allowed).
	AllowTTL time.Duration
	// DenyTTL keeps negative answers (invalid token, denied).
	DenyTTL time.Duration
}

// DefaultTokenCache are upstream's webhook token cache settings for
// positive answers, plus a short negative cache so that a client retrying a
// bad token in a loop does not turn into a TokenReview per request.
var DefaultTokenCache = TokenCacheOptions(defaultAuthnCacheTTL)

// TokenCacheOptions keeps positive TokenReview answers for ttl
// (--authentication-token-webhook-cache-ttl) and invalid tokens for at
// most 10 s: caching garbage longer saves the API server nothing.
func TokenCacheOptions(ttl time.Duration) CacheOptions {
	return CacheOptions{AllowTTL: ttl, DenyTTL: min(ttl, defaultAuthnFailCacheTTL)}
}

// TokenAuthenticator authenticates "Authorization: Bearer" requests with
// the TokenReview API (--authentication-token-webhook). Answers are cached
// by a hash of the token. On success the header is removed, so it is never
// passed on to the runtime's streaming server.
func TokenAuthenticator(review TokenReviewFunc, cache CacheOptions) Authenticator {
	c := newReviewCache[*UserInfo](cache)
	return AuthenticatorFunc(func(r *http.Request) (*UserInfo, bool, error) {
		token, ok := bearerToken(r)
		if !ok {
			return nil, false, nil
		}
		key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
		e, found := c.get(key)
		if !found {
			user, err := reviewToken(r.Context(), review, token)
			if err != nil && !errors.Is(err, errInvalidCredentials) {
				// The API server did not answer: nothing to cache.
				return nil, false, err
			}
			e = cacheEntry[*UserInfo]{val: user, err: err}
			c.put(key, e)
		}
		if e.err != nil {
			return nil, false, e.err
		}
		user := e.val
		r.Header.Del("Authorization")
		return user, true, nil
	})
}

func reviewToken(ctx context.Context, review TokenReviewFunc, token string) (*UserInfo, error) {
	resp, err := review(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	st := resp.Status
	switch {
	case st.Error != "":
		return nil, fmt.Errorf("bearer token: %w: %s", errInvalidCredentials, st.Error)
	case !st.Authenticated:
		return nil, fmt.Errorf("bearer token: %w", errInvalidCredentials)
	}
	u := &UserInfo{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if len(st.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range st.User.Extra {
			u.Extra[k] = v
		}
	}
	return u, nil
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Authenticators tries each authenticator in turn; the first that
// recognises the request decides. When none does and none found invalid
// credentials, the request is anonymous if allowAnonymous, else refused.
type Authenticators struct {
	List           []Authenticator
	AllowAnonymous bool
}

// Authenticate returns who made r, or an error wrapping ErrUnauthorized.
func (a Authenticators) Authenticate(r *http.Request) (*UserInfo, error) {
	var errs []error
	for _, authn := range a.List {
		user, ok, err := authn.AuthenticateRequest(r)
		if ok {
			return user, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, errors.Join(errs...))
	}
	if a.AllowAnonymous {
		return &UserInfo{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}, nil
	}
	return nil, fmt.Errorf("%w: no credentials", ErrUnauthorized)
}

func withGroup(groups []string, g string) []string {
	out := append([]string(nil), groups...)
	for _, have := range out {
		if have == g {
			return out
		}
	}
	return append(out, g)
}
