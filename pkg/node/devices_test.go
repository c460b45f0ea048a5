package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSetDevices(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old       v1.ResourceList
		devices   map[v1.ResourceName]DeviceCount
		cap, allo int64
	}{
		{"new resource", nil, map[v1.ResourceName]DeviceCount{"example.com/r": {2, 1}}, 2, 1},
		{"plugin gone: 0 replaces old", v1.ResourceList{"example.com/r": resource.MustParse("2")}, map[v1.ResourceName]DeviceCount{"example.com/r": {}}, 0, 0},
		{"not reported: old kept", v1.ResourceList{"example.com/r": resource.MustParse("2")}, nil, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := v1.NodeStatus{Capacity: tc.old.DeepCopy(), Allocatable: tc.old.DeepCopy()}
			setDevices(&st, tc.devices)
			c, a := st.Capacity["example.com/r"], st.Allocatable["example.com/r"]
			if c.Value() != tc.cap || a.Value() != tc.allo {
				t.Errorf("capacity %s allocatable %s, want %d %d", c.String(), a.String(), tc.cap, tc.allo)
			}
		})
	}
}
