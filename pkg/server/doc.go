// Package server holds nodelet's HTTP endpoints: the healthz server
// (--healthz-port, localhost by default), the unauthenticated read-only server
// (--read-only-port: /pods, /healthz) and, later, the authenticated node API
// (--port).
//
// Building a handler is kept apart from listening: handler constructors
// (HealthzHandler, ReadOnlyHandler) take their data as function-typed
// dependencies and answer 501 for a nil one, and Server only binds, serves and
// shuts down. The authenticated API will be another mux wrapped in an auth
// filter and handed to NewServer.
package server
