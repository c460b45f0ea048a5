package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

type resourceQuantity = resource.Quantity

func zero(name v1.ResourceName) resource.Quantity {
	if name == v1.ResourceCPU {
		return *resource.NewMilliQuantity(0, resource.DecimalSI)
	}
	return *resource.NewQuantity(0, resource.BinarySI)
}

// hostPort is one port a pod takes on the node.
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

// hostPorts are the host ports p's containers (init containers included)
// ask for; an empty IP is every address (0.0.0.0), an empty protocol TCP.
func hostPorts(p *v1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for _, cp := range c.Ports {
				if cp.HostPort <= 0 {
					continue
				}
				hp := hostPort{ip: cp.HostIP, protocol: cp.Protocol, port: cp.HostPort}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				if hp.protocol == "" {
					hp.protocol = v1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(p.Spec.InitContainers)
	add(p.Spec.Containers)
	return out
}

// portsConflict reports whether a host port of p is taken by an active
// pod: the same protocol and port, on the same address or where either is
// every address, as the scheduler's NodePorts filter.
func portsConflict(p *v1.Pod, active []*v1.Pod) bool {
	want := hostPorts(p)
	if len(want) == 0 {
		return false
	}
	for _, o := range active {
		for _, taken := range hostPorts(o) {
			for _, w := range want {
				if w.port == taken.port && w.protocol == taken.protocol &&
					(w.ip == taken.ip || w.ip == "0.0.0.0" || taken.ip == "0.0.0.0") {
					return true
				}
			}
		}
	}
	return false
}
