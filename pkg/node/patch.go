package node

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
//
// status.addresses is declared a list merged by type, which it is not: a
// dual-stack node has two InternalIPs. Merged by type, a changed address
// order (--node-ip's families swapped) or a changed address of a type that
// occurs twice would not reach the API server, or would come out mangled.
// So, as upstream does, changed addresses go as a whole list that replaces
// the old one; the rest of the status is merged as usual.
func statusPatch(old *v1.Node, status v1.NodeStatus) ([]byte, error) {
	n := old.DeepCopy()
	n.Status = status
	replaceAddresses := len(old.Status.Addresses) > 0 && !equality.Semantic.DeepEqual(old.Status.Addresses, status.Addresses)
	if replaceAddresses {
		n.Status.Addresses = old.Status.Addresses
	}
	patch, err := twoWayPatch(old, n)
	if err != nil || !replaceAddresses {
		return patch, err
	}
	return withAddressesReplaced(patch, status.Addresses)
}

// withAddressesReplaced sets status.addresses in a strategic merge patch to
// addresses, marked to replace the list rather than merge into it.
func withAddressesReplaced(patch []byte, addresses []v1.NodeAddress) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(patch, &doc); err != nil {
		return nil, fmt.Errorf("node patch: %w", err)
	}
	st, _ := doc["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		doc["status"] = st
	}
	list := make([]any, 0, len(addresses)+1)
	for _, a := range addresses {
		list = append(list, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	st["addresses"] = append(list, map[string]any{"$patch": "replace"})
	// The order directive of a merge would contradict the replacement.
	delete(st, "$setElementOrder/addresses")
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("node patch: %w", err)
	}
	return out, nil
}

// emptyPatch reports a patch that changes nothing.
func emptyPatch(p []byte) bool { return string(p) == "{}" }
