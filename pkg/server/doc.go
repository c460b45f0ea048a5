// Package server holds nodelet's HTTP endpoints: the healthz server
// (--healthz-port, localhost by default), the unauthenticated read-only server
// (--read-only-port: /pods, /healthz) and the authenticated node API (--port,
// HTTPS): pods, health, metrics, stats, container logs, and exec, attach and
// port-forward proxied to the runtime's streaming server. docs/API.md
// describes the node API.
//
// Building a handler is kept apart from listening: handler constructors
// (HealthzHandler, ReadOnlyHandler, APIRoutes) take their data as
// function-typed dependencies and answer 501 for a nil one, and Server only
// binds, serves and shuts down. The node API is APIRoutes behind WithAuth:
// authentication (x509 client certificates, TokenReview, anonymous) and
// authorization (SubjectAccessReview or AlwaysAllow) on the node object, with
// upstream's mapping of paths to node subresources (NodeAttributes).
package server
