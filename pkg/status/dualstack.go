package status

import "net/netip"

// DualStack returns what status.podIPs and status.hostIPs may hold of ips:
// at most one address of each family, as the API server requires, the
// first of ips (the runtime's primary, or the node's first --node-ip) first
// and then the first address of the other family. Entries that are not IP
// addresses are dropped.
func DualStack(ips []string) []string {
	var out []string
	var have4, have6 bool
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if a.Is4() && !have4 {
			have4 = true
			out = append(out, a.String())
		} else if a.Is6() && !have6 {
			have6 = true
			out = append(out, a.String())
		}
	}
	return out
}
