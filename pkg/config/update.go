package config

import v1 "k8s.io/api/core/v1"

// Operation is what a PodUpdate asks of its consumer.
type Operation int

const (
	// SET carries the complete set of pods of one source (or all sources,
	// Source == pod.AllSource, in snapshot mode).
	SET Operation = iota
	// ADD: pods seen for the first time.
	ADD
	// UPDATE: pods whose spec, labels or annotations changed.
	UPDATE
	// DELETE: pods that gained a deletionTimestamp; kill them gracefully.
	DELETE
	// REMOVE: pods that are gone from their source; kill and forget them.
	REMOVE
	// RECONCILE: pods whose status alone changed.
	RECONCILE
)

func (o Operation) String() string {
	switch o {
	case SET:
		return "SET"
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	}
	return "UNKNOWN"
}

// PodUpdate is one message from a source into the merger, or from the merger
// to the sync loop.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     Operation
	Source string
}
