// Package server holds nodelet's HTTP endpoints: the healthz server
// (--healthz-port, localhost by default), the unauthenticated read-only server
// (--read-only-port: health, pods, stats and metrics) and the authenticated node API (--port,
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
//
// The authentication and authorization are hand-written on purpose, for a
// small binary: upstream's live in k8s.io/kubernetes (pkg/kubelet/server),
// which nodelet must not import, on top of k8s.io/apiserver's delegating
// authenticator and authorizer, which need client-go's typed clientsets.
// nodelet links neither; dropping client-go's clientset alone took the
// binary from 91 MB to 44 MB. What is used of the API is two POSTs
// (TokenReview, SubjectAccessReview) through pkg/kube.
package server
