package node

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// twoWayPatch is the strategic merge patch that turns old into new. A
// strategic merge patch (not an update) is what the node may send under
// NodeRestriction without a read-modify-write race: lists with a merge key
// (conditions by type) are merged, so conditions other agents own survive.
func twoWayPatch(old, new *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("marshal node: %w", err)
	}
	newJSON, err := json.Marshal(new)
	if err != nil {
		return nil, fmt.Errorf("marshal node: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node patch: %w", err)
	}
	return patch, nil
}

// statusPatch is the patch of old's status to status.
func statusPatch(old *v1.Node, status v1.NodeStatus) ([]byte, error) {
	n := old.DeepCopy()
	n.Status = status
	return twoWayPatch(old, n)
}

// emptyPatch reports a patch that changes nothing.
func emptyPatch(p []byte) bool { return string(p) == "{}" }
