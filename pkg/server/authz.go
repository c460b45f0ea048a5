package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// Upstream's webhook authorizer cache defaults (authorization.webhook.
// cacheAuthorizedTTL / cacheUnauthorizedTTL).
const (
	defaultAuthzAllowTTL = 5 * time.Minute
	defaultAuthzDenyTTL  = 30 * time.Second
)

// DefaultAuthzCache are upstream's SubjectAccessReview cache settings.
var DefaultAuthzCache = CacheOptions{AllowTTL: defaultAuthzAllowTTL, DenyTTL: defaultAuthzDenyTTL}

// Attributes describe one request as an API server authorizer sees it:
// always a request on the node object (resource "nodes", name = node name,
// API version v1, no group or namespace), with a subresource chosen by path.
type Attributes struct {
	User        *UserInfo
	Verb        string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

func (a Attributes) String() string {
	return fmt.Sprintf("user=%s, verb=%s, resource=%s, subresource=%s", a.User.Name, a.Verb, a.Resource, a.Subresource)
}

// Authorizer decides whether a request may proceed. reason explains a
// denial; err means no decision could be made.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (bool, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	return f(ctx, a)
}

// AlwaysAllow is --authorization-mode=AlwaysAllow: every authenticated
// request proceeds.
var AlwaysAllow Authorizer = AuthorizerFunc(func(context.Context, Attributes) (bool, string, error) {
	return true, "", nil
})

// SubjectAccessReviewFunc asks the API server whether a user may do
// something (client.AuthorizationV1().SubjectAccessReviews().Create).
type SubjectAccessReviewFunc func(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)

// SubjectAccessReviewAuthorizer is --authorization-mode=Webhook: each
// request becomes a SubjectAccessReview. Answers are cached per user and
// attributes; failed reviews are not.
func SubjectAccessReviewAuthorizer(review SubjectAccessReviewFunc, cache CacheOptions) Authorizer {
	c := newReviewCache[string](cache)
	return AuthorizerFunc(func(ctx context.Context, a Attributes) (bool, string, error) {
		key := authzKey(a)
		if e, ok := c.get(key); ok {
			return e.err == nil, e.val, nil
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   a.User.Name,
			UID:    a.User.UID,
			Groups: a.User.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb:        a.Verb,
				Version:     "v1",
				Resource:    a.Resource,
				Subresource: a.Subresource,
				Name:        a.Name,
			},
		}}
		if len(a.User.Extra) > 0 {
			sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
			for k, v := range a.User.Extra {
				sar.Spec.Extra[k] = v
			}
		}
		resp, err := review(ctx, sar)
		if err != nil {
			return false, "", fmt.Errorf("subject access review: %w", err)
		}
		st := resp.Status
		if st.Allowed && !st.Denied {
			c.put(key, cacheEntry[string]{})
			return true, "", nil
		}
		reason := st.Reason
		if st.EvaluationError != "" {
			reason = strings.TrimSpace(reason + " " + st.EvaluationError)
		}
		// The error only marks the entry as a denial; the reason is the value.
		c.put(key, cacheEntry[string]{val: reason, err: ErrForbidden})
		return false, reason, nil
	})
}

// authzKey identifies a decision: everything the review is built from.
func authzKey(a Attributes) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q|%q|%q|%q|%q|%q|%q", a.User.Name, a.User.UID, a.User.Groups, a.Verb, a.Resource, a.Subresource, a.Name)
	keys := make([]string, 0, len(a.User.Extra))
	for k := range a.User.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%q=%q", k, a.User.Extra[k])
	}
	return b.String()
}

// Subresources of the node object that guard parts of the node API.
const (
	SubresourceProxy      = "proxy"
	SubresourceStats      = "stats"
	SubresourceMetrics    = "metrics"
	SubresourceLog        = "log"
	SubresourceSpec       = "spec"
	SubresourceCheckpoint = "checkpoint"
	SubresourcePods       = "pods"
	SubresourceHealthz    = "healthz"
	SubresourceConfigz    = "configz"
)

// NodeAttributes maps a request to the authorization checks it needs, as
// the upstream kubelet does. The request is allowed when any of the
// returned attributes is: /pods, /runningpods, /healthz and /configz are
// checked against their own subresource first and against "proxy" second
// (upstream's fine-grained authorization, so that older RBAC that grants
// only nodes/proxy keeps working); /stats, /metrics, /logs, /spec and
// /checkpoint have their own subresource only; everything else, including
// /containerLogs, /exec, /attach, /portForward and /run, needs nodes/proxy.
func NodeAttributes(user *UserInfo, r *http.Request, nodeName string) []Attributes {
	base := Attributes{
		User:     user,
		Verb:     verbFor(r.Method),
		Resource: "nodes",
		Name:     nodeName,
		Path:     r.URL.Path,
	}
	with := func(sub string) Attributes { a := base; a.Subresource = sub; return a }
	p := r.URL.Path
	switch {
	case isSubpath(p, "/stats"):
		return []Attributes{with(SubresourceStats)}
	case isSubpath(p, "/metrics"):
		return []Attributes{with(SubresourceMetrics)}
	case isSubpath(p, "/logs"):
		return []Attributes{with(SubresourceLog)}
	case isSubpath(p, "/spec"):
		return []Attributes{with(SubresourceSpec)}
	case isSubpath(p, "/checkpoint"):
		return []Attributes{with(SubresourceCheckpoint)}
	case isSubpath(p, "/pods"), isSubpath(p, "/runningpods"):
		return []Attributes{with(SubresourcePods), with(SubresourceProxy)}
	case isSubpath(p, "/healthz"):
		return []Attributes{with(SubresourceHealthz), with(SubresourceProxy)}
	case isSubpath(p, "/configz"):
		return []Attributes{with(SubresourceConfigz), with(SubresourceProxy)}
	default:
		return []Attributes{with(SubresourceProxy)}
	}
}

// verbFor maps the HTTP method to the API verb, as upstream.
func verbFor(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	default:
		return ""
	}
}

// isSubpath reports whether p is prefix itself or lies below it, so that
// "/statsfoo" is not mistaken for "/stats".
func isSubpath(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}
