package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/klog/v2"
)

// Auth is what guards the node API: who may call it and what they may do.
type Auth struct {
	Authenticators Authenticators
	Authorizer     Authorizer
	// NodeName is the Node object requests are authorized against.
	NodeName string
}

type userKey struct{}

// UserFrom returns the authenticated user of a request that went through
// WithAuth.
func UserFrom(ctx context.Context) (*UserInfo, bool) {
	u, ok := ctx.Value(userKey{}).(*UserInfo)
	return u, ok
}

// WithAuth wraps h so that every request is authenticated (401 when it
// cannot be) and authorized (403 when denied) before h sees it, whatever
// its path: an unknown path answers 401 to a stranger, not 404.
func WithAuth(h http.Handler, auth Auth) http.Handler {
	authz := auth.Authorizer
	if authz == nil {
		// Fail closed: a wiring mistake must not open the node.
		authz = AuthorizerFunc(func(context.Context, Attributes) (bool, string, error) {
			return false, "no authorizer configured", nil
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := auth.Authenticators.Authenticate(r)
		if err != nil {
			klog.V(3).InfoS("Unauthenticated node API request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			// The reason stays in the log: it would help an attacker more
			// than a legitimate client, which knows what it sent.
			w.Header().Set("WWW-Authenticate", `Bearer realm="nodelet"`)
			http.Error(w, "Unauthorized", statusFor(err))
			return
		}
		if err := authorize(r.Context(), authz, NodeAttributes(user, r, auth.NodeName)); err != nil {
			if !errors.Is(err, ErrForbidden) {
				klog.ErrorS(err, "Authorizing node API request", "user", user.Name, "path", r.URL.Path)
			} else {
				klog.V(3).InfoS("Node API request denied", "user", user.Name, "method", r.Method, "path", r.URL.Path, "err", err)
			}
			http.Error(w, err.Error(), statusFor(err))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

// authorize allows the request when any of attrs is allowed; it returns an
// error wrapping ErrForbidden naming every check that was denied, or a plain
// error when a check could not be made and none allowed.
func authorize(ctx context.Context, authz Authorizer, attrs []Attributes) error {
	var denied []string
	var failed error
	for _, a := range attrs {
		ok, reason, err := authz.Authorize(ctx, a)
		switch {
		case err != nil:
			failed = fmt.Errorf("authorization error (%s): %w", a, err)
		case ok:
			return nil
		default:
			msg := "(" + a.String() + ")"
			if reason != "" {
				msg += ": " + reason
			}
			denied = append(denied, msg)
		}
	}
	if failed != nil {
		return failed
	}
	return fmt.Errorf("%w %s", errForbiddenTitle, strings.Join(denied, ", "))
}

// errForbiddenTitle reads as upstream's message: "Forbidden (user=...)".
var errForbiddenTitle error = &titledError{msg: "Forbidden", err: ErrForbidden}

// titledError is a sentinel with a capitalised message for the client.
type titledError struct {
	msg string
	err error
}

func (e *titledError) Error() string { return e.msg }
func (e *titledError) Unwrap() error { return e.err }
