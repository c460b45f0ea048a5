package runtime

import (
	"slices"
	"testing"
)

func TestOrderPodIPs(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ips, nodeIPs []string
		want         []string
	}{
		{"none", nil, []string{"10.0.0.1"}, nil},
		{"single IPv4", []string{"10.89.0.5"}, []string{"10.0.0.1"}, []string{"10.89.0.5"}},
		{"single IPv6 on an IPv4 node", []string{"fd00:89::5"}, []string{"10.0.0.1"}, []string{"fd00:89::5"}},
		{"IPv4 node keeps IPv4 first", []string{"10.89.0.5", "fd00:89::5"}, []string{"10.0.0.1", "fd00::1"}, []string{"10.89.0.5", "fd00:89::5"}},
		{"IPv4 node reorders an IPv6-first runtime", []string{"fd00:89::5", "10.89.0.5"}, []string{"10.0.0.1"}, []string{"10.89.0.5", "fd00:89::5"}},
		{"IPv6 node puts IPv6 first", []string{"10.89.0.5", "fd00:89::5"}, []string{"fd00::1", "10.0.0.1"}, []string{"fd00:89::5", "10.89.0.5"}},
		{"no node IP means IPv4 first", []string{"fd00:89::5", "10.89.0.5"}, nil, []string{"10.89.0.5", "fd00:89::5"}},
		{"one per family, the first of each", []string{"10.89.0.5", "10.89.0.6", "fd00:89::5", "fd00:89::6"}, []string{"fd00::1"}, []string{"fd00:89::5", "10.89.0.5"}},
		{"mapped IPv4 counts as IPv4", []string{"::ffff:10.89.0.5", "fd00:89::0005"}, []string{"10.0.0.1"}, []string{"10.89.0.5", "fd00:89::5"}},
		{"garbage dropped", []string{"garbage", "fd00:89::5"}, []string{"10.0.0.1"}, []string{"fd00:89::5"}},
		{"garbage node IP means IPv4 first", []string{"fd00:89::5", "10.89.0.5"}, []string{"x"}, []string{"10.89.0.5", "fd00:89::5"}},
	} {
		if got := OrderPodIPs(tc.ips, tc.nodeIPs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: OrderPodIPs(%q, %q) = %q, want %q", tc.name, tc.ips, tc.nodeIPs, got, tc.want)
		}
	}
}
