package runtime

import "net/netip"

// OrderPodIPs is what a pod's status.podIPs, its downward API
// (status.podIP, status.podIPs) and its hooks use of the sandbox's IPs, by
// upstream's rule: the first IP of the node's primary family (the family of
// nodeIPs[0], the first --node-ip; IPv4 when there is none), then the first
// IP of the other family; further IPs are dropped, as the API server takes at
// most one per family. The runtime's order does not decide: containerd 1.6
// reports an IPv4 address as the primary whatever the CNI result's order, so
// a node whose first --node-ip is IPv6 would otherwise get pods whose
// primary IP is of the wrong family. Entries that are not IPs are dropped;
// IPv4-mapped IPv6 addresses count as IPv4.
func OrderPodIPs(ips, nodeIPs []string) []string {
	primary6 := false
	if len(nodeIPs) > 0 {
		if a, err := netip.ParseAddr(nodeIPs[0]); err == nil {
			primary6 = !a.Unmap().Is4()
		}
	}
	first := func(want6 bool) (string, bool) {
		for _, s := range ips {
			a, err := netip.ParseAddr(s)
			if err != nil {
				continue
			}
			if a = a.Unmap(); a.Is4() != want6 {
				return a.String(), true
			}
		}
		return "", false
	}
	var out []string
	if ip, ok := first(primary6); ok {
		out = append(out, ip)
	}
	if ip, ok := first(!primary6); ok {
		out = append(out, ip)
	}
	return out
}
