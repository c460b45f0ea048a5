package node

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func TestStatusPatch(t *testing.T) {
	cfg := testConfig()
	old := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7", Labels: map[string]string{"a": "b"}}}
	old.Status = DesiredStatus(cfg, healthyFacts(), v1.NodeStatus{}, t0)
	old.Status.Conditions = append(old.Status.Conditions, v1.NodeCondition{Type: "KernelDeadlock", Status: v1.ConditionFalse})

	same, err := statusPatch(old, old.Status)
	if err != nil || !emptyPatch(same) {
		t.Fatalf("patch of an unchanged status: %s %v", same, err)
	}

	f := healthyFacts()
	f.DiskPressure = true
	desired := DesiredStatus(cfg, f, old.Status, t0.Add(time.Minute))
	p, err := statusPatch(old, desired)
	if err != nil {
		t.Fatal(err)
	}
	s := string(p)
	for _, want := range []string{`"DiskPressure"`, `"KubeletHasDiskPressure"`, `$setElementOrder/conditions`} {
		if !strings.Contains(s, want) {
			t.Errorf("patch lacks %s: %s", want, s)
		}
	}
	for _, unwanted := range []string{`"metadata"`, `"labels"`, `"capacity"`, `"nodeInfo"`} {
		if strings.Contains(s, unwanted) {
			t.Errorf("patch touches %s: %s", unwanted, s)
		}
	}

	// Applied to what the API server has, the patch keeps the foreign
	// condition and yields the desired status.
	oldJSON, _ := json.Marshal(old)
	merged, err := strategicpatch.StrategicMergePatch(oldJSON, p, v1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Node
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	if c := condition(got.Status.Conditions, v1.NodeDiskPressure); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("DiskPressure after patch: %+v", c)
	}
	if condition(got.Status.Conditions, "KernelDeadlock") == nil {
		t.Errorf("foreign condition lost: %+v", got.Status.Conditions)
	}
	if NeedsStatusPatch(got.Status, desired, t0, t0.Add(time.Minute), time.Hour) {
		t.Errorf("status after the patch still differs from the desired one")
	}
}

// Addresses merge by type in the API's schema, which two InternalIPs defeat:
// the patch replaces the list, so a dual-stack node's swapped or changed
// addresses reach the API server as they are, in order.
func TestStatusPatchDualStackAddresses(t *testing.T) {
	addrs := func(ips ...string) []v1.NodeAddress {
		var out []v1.NodeAddress
		for _, ip := range ips {
			out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
		return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: "n1"})
	}
	for _, tc := range []struct {
		name     string
		old, new []v1.NodeAddress
	}{
		{"families swapped", addrs("192.0.2.2", "fd00::2"), addrs("fd00::2", "192.0.2.2")},
		{"second address changed", addrs("192.0.2.2", "fd00::2"), addrs("192.0.2.2", "fd00::3")},
		{"single stack to dual stack", addrs("192.0.2.2"), addrs("192.0.2.2", "fd00::2")},
		{"dual stack to single stack", addrs("192.0.2.2", "fd00::2"), addrs("192.0.2.2")},
		{"first registration", nil, addrs("192.0.2.2", "fd00::2")},
	} {
		old := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		old.Status.Addresses = tc.old
		old.Status.Conditions = []v1.NodeCondition{{Type: "KernelDeadlock", Status: v1.ConditionFalse}}
		desired := *old.Status.DeepCopy()
		desired.Addresses = tc.new
		p, err := statusPatch(old, desired)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		oldJSON, _ := json.Marshal(old)
		merged, err := strategicpatch.StrategicMergePatch(oldJSON, p, v1.Node{})
		if err != nil {
			t.Fatalf("%s: apply %s: %v", tc.name, p, err)
		}
		var got v1.Node
		if err := json.Unmarshal(merged, &got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Status.Addresses, tc.new) {
			t.Errorf("%s: addresses after the patch %v, want %v (patch %s)", tc.name, got.Status.Addresses, tc.new, p)
		}
		if len(got.Status.Conditions) != 1 {
			t.Errorf("%s: conditions after the patch %v (patch %s)", tc.name, got.Status.Conditions, p)
		}
	}
}
