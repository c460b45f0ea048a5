package node

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// Facts is what was observed about the machine and the runtime at one
// moment: the only input of DesiredStatus besides Config and the previous
// status. Unknown values are zero (or nil), and DesiredStatus keeps the
// previously reported value for them rather than blanking a field.
type Facts struct {
	Machine Machine
	// MemoryAvailable is the memory available for new work in bytes
	// (MemAvailable); negative when unknown.
	MemoryAvailable int64
	// PIDsInUse and PIDsMax count tasks (threads) against the kernel's limit;
	// PIDsMax 0 means unknown.
	PIDsInUse, PIDsMax int64
	// DiskPressure reports the image filesystem over the image GC high
	// threshold.
	DiskPressure bool
	// RuntimeErrors say why the container runtime cannot run pods (down,
	// not ready, network not ready, not relisted for too long); none means
	// healthy.
	RuntimeErrors []string
	// RuntimeVersion is "<name>://<version>", "" when unknown.
	RuntimeVersion string
	// Images are the images on the node for status.images, nil when the
	// runtime could not be asked (an empty slice means none).
	Images []v1.ContainerImage
	// Devices are the device plugins' extended resources (nil: no device
	// manager).
	Devices map[v1.ResourceName]DeviceCount
}

// DeviceCount is one extended resource of the device plugins: capacity
// every device, allocatable the healthy ones.
type DeviceCount struct {
	Capacity, Allocatable int64
}

// Machine is the hardware and OS the node reports. Capacity figures of 0 are
// unknown: Ready stays false until cpu and memory are known.
type Machine struct {
	CPUs int64
	// MemoryBytes is MemTotal.
	MemoryBytes int64
	// EphemeralStorageBytes is the size of the filesystem of nodelet's root
	// dir.
	EphemeralStorageBytes int64
	// HugePages maps a page size in bytes to the bytes of pages of that size.
	HugePages map[int64]int64

	KernelVersion string
	OSImage       string
	MachineID     string
	SystemUUID    string
	BootID        string
}

// FactSource observes the node. It never fails as a whole: what cannot be
// read is left unknown in Facts (and logged by the source).
type FactSource interface {
	Facts(ctx context.Context) Facts
}

// FactFunc adapts a function to FactSource.
type FactFunc func(ctx context.Context) Facts

// Facts calls f.
func (f FactFunc) Facts(ctx context.Context) Facts { return f(ctx) }
