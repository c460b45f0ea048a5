package main

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/deviceplugin"
	"github.com/nodelet/nodelet/pkg/node"
	"github.com/nodelet/nodelet/pkg/security"
)

// nodeDevices is what the node status and admission read of the device
// plugins (*deviceplugin.Manager).
type nodeDevices interface {
	Resources() map[v1.ResourceName]deviceplugin.Counts
	Allocatable() v1.ResourceList
}

// withDevices adds the device plugins' resources to the facts of src.
func withDevices(src node.FactSource, d nodeDevices) node.FactSource {
	if d == nil {
		return src
	}
	return node.FactFunc(func(ctx context.Context) node.Facts {
		f := src.Facts(ctx)
		f.Devices = map[v1.ResourceName]node.DeviceCount{}
		for name, c := range d.Resources() {
			f.Devices[name] = node.DeviceCount{Capacity: c.Capacity, Allocatable: c.Allocatable}
		}
		return f
	})
}

// withDeviceAllocatable is allocatable with the device plugins' healthy
// counts (fresher than the Node the API shows).
func withDeviceAllocatable(allocatable v1.ResourceList, d nodeDevices) v1.ResourceList {
	if d == nil {
		return allocatable
	}
	out := allocatable.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for name, q := range d.Allocatable() {
		out[name] = q
	}
	return out
}

// admitDevices reserves the devices p asks for, refusing it as upstream
// (UnexpectedAdmissionError) when they are not free.
func admitDevices(d *deviceplugin.Manager, p *v1.Pod) *security.Rejection {
	if d == nil {
		return nil
	}
	if err := d.Admit(context.Background(), p); err != nil {
		return &security.Rejection{Reason: deviceplugin.ReasonUnexpectedAdmissionError, Message: err.Error()}
	}
	return nil
}
