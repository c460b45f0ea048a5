// Package node makes nodelet a cluster member: it registers the Node object,
// keeps its status current, renews the node's Lease, and re-creates the Node
// when someone deletes it.
//
// The decisions are pure functions over plain data, tested with tables:
// InitialNode (the object to register), ReconcileExisting (what to fix on a
// Node that was already there), DesiredStatus (the status from the observed
// Facts), NeedsStatusPatch (whether the API server must hear about it),
// ConditionEvents (which transitions to announce) and DesiredLease (the
// renewed Lease). Controller and LeaseController do the I/O around them with
// client-go; HostFacts gathers the facts from /proc, /sys, statfs and the
// container runtime.
//
// Everything here runs under the Node authorizer and the NodeRestriction
// admission plugin, as the upstream kubelet does: the node creates its own
// Node, patches its status, and reads and writes only its own Lease. Nothing
// else in nodelet waits for this package: when the API server is unreachable,
// registration, status and lease each retry with backoff and catch up, while
// pods keep running.
package node
