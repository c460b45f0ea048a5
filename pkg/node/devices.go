package node

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// setDevices sets the device plugins' extended resources in capacity and
// allocatable; a resource whose plugin is gone is reported by the device
// manager with 0 (and so stays 0), as upstream.
func setDevices(st *v1.NodeStatus, devices map[v1.ResourceName]DeviceCount) {
	for name, c := range devices {
		if st.Capacity == nil {
			st.Capacity = v1.ResourceList{}
		}
		if st.Allocatable == nil {
			st.Allocatable = v1.ResourceList{}
		}
		st.Capacity[name] = *resource.NewQuantity(c.Capacity, resource.DecimalSI)
		st.Allocatable[name] = *resource.NewQuantity(c.Allocatable, resource.DecimalSI)
	}
}
