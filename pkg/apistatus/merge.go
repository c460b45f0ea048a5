package apistatus

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// nodeConditions are the pod conditions the node owns: it writes them and
// removes them. Any other condition (a readiness gate's, a controller's) is
// someone else's and is kept as the API has it.
var nodeConditions = sets.New(
	v1.PodScheduled,
	v1.PodReady,
	v1.PodInitialized,
	v1.ContainersReady,
	v1.PodReadyToStartContainers,
)

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// Merge returns the status to write over base (what the API has) for the
// node's status desired. It keeps from base what is not the node's to say:
// other owners' conditions, the start time already reported (a restarted
// nodelet does not know it), and the transition time of a condition whose
// status did not change. ok is false when base is terminal and desired is
// not: a pod never leaves a terminal phase, so that status must not be
// written. Neither argument is modified.
func Merge(base, desired v1.PodStatus) (merged v1.PodStatus, ok bool) {
	if isTerminal(base.Phase) && !isTerminal(desired.Phase) {
		return base, false
	}
	out := *desired.DeepCopy()
	if base.StartTime != nil {
		t := *base.StartTime
		out.StartTime = &t
	}
	owned := sets.New[v1.PodConditionType]()
	for i := range out.Conditions {
		c := &out.Conditions[i]
		owned.Insert(c.Type)
		for _, bc := range base.Conditions {
			if bc.Type == c.Type && bc.Status == c.Status && !bc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = bc.LastTransitionTime
			}
		}
	}
	// Owned conditions first, in the node's order, then the others in the
	// API's order: the same list every time, so no patch only reorders it.
	for _, bc := range base.Conditions {
		if !owned.Has(bc.Type) && !nodeConditions.Has(bc.Type) {
			out.Conditions = append(out.Conditions, bc)
		}
	}
	return out, true
}

// Patch returns the strategic merge patch that turns status base into merged
// for the pod uid, or nil when there is nothing to change. The patch names
// the UID, so that the API server refuses it for another pod that took the
// name meanwhile (a re-created mirror). Comparison is on the JSON forms,
// which is what the API server keeps: times at second precision.
func Patch(uid types.UID, base, merged v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: base})
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	// The UID only in the new object: it shows up in the patch, as a
	// precondition.
	newJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: merged})
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	if bytes.Equal(patch, uidOnlyPatch(uid)) {
		return nil, nil
	}
	return patch, nil
}

func uidOnlyPatch(uid types.UID) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid))
}
