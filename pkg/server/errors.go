package server

import (
	"errors"
	"net/http"

	"k8s.io/klog/v2"
)

// Errors handlers return; statusFor maps them to HTTP status codes.
var (
	// ErrNotImplemented: the dependency behind the endpoint was not provided.
	ErrNotImplemented = errors.New("not implemented")
	// ErrNotFound: the requested object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrBadRequest: the request is malformed, or asks for something the
	// object's state does not allow (logs of a container that never ran).
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthorized: the request carries no credentials nodelet accepts.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the authenticated user may not do what it asks.
	ErrForbidden = errors.New("forbidden")
	// ErrUnavailable: a backend (the runtime, the API server during a
	// review) could not be reached; the client may retry.
	ErrUnavailable = errors.New("unavailable")
	// ErrUnsupported: the container runtime cannot do what the request
	// asks (checkpointing on a runtime without it).
	ErrUnsupported = errors.New("not supported by the container runtime")
)

// statusFor is the one place errors become status codes.
func statusFor(err error) int {
	switch {
	case errors.Is(err, ErrNotImplemented), errors.Is(err, ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// writeError answers a request with err as plain text.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := statusFor(err)
	if code >= http.StatusInternalServerError && code != http.StatusNotImplemented {
		klog.ErrorS(err, "HTTP request failed", "method", r.Method, "path", r.URL.Path)
	}
	http.Error(w, err.Error(), code)
}

// handlerFunc is a handler that returns its error instead of writing it, so
// every endpoint reports failures the same way.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (h handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		writeError(w, r, err)
	}
}
