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

// withoutDevices is allocatable without the device plugins' resources:
// the device manager's admission (admitDevices, before the predicates)
// judges them against its own free healthy devices, as upstream's, so the
// predicates leave them alone. The Node the API shows lags behind (after a
// restart, before the plugin registers again, it has no healthy device):
// judged by it, a pod holding devices would be refused on re-admission.
func withoutDevices(allocatable v1.ResourceList, d nodeDevices) v1.ResourceList {
	if d == nil {
		return allocatable
	}
	out := allocatable.DeepCopy()
	for name := range d.Resources() {
		delete(out, name)
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
