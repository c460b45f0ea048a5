// Package config turns pod sources into the stream of pod changes the sync
// loop acts on.
//
// Sources (a manifest directory, a manifest URL and, later, the API server)
// each send complete snapshots (Op SET) of their pods into a channel obtained
// from Merger.Channel. The Merger owns the per-source state and diffs each
// snapshot into incremental operations (REMOVE, ADD, UPDATE, DELETE,
// RECONCILE) or, in snapshot mode, one SET with every pod of every source.
//
// Static pods (file and URL sources) go through the same pipeline: decode
// (decode.go), API-server defaults (defaults.go), node identity (static.go)
// and validation (validate.go). Broken manifests never crash a source and
// never silently drop a running pod; they are reported once per distinct
// problem through a Reporter.
package config
