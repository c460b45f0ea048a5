package criconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The downward API's pod IPs follow status.podIPs: the node's primary family
// (its first IP's) first, whatever order the runtime reported them in; a
// host-network pod reads the node's IPs.
func TestFieldRefPodIPsOrder(t *testing.T) {
	runtimeOrder := []string{"10.89.0.5", "fd00:89::5"} // containerd 1.6: IPv4 first, always
	for _, tc := range []struct {
		name        string
		nodeIPs     []string
		hostNetwork bool
		path, want  string
	}{
		{"IPv4 node", []string{"192.0.2.2", "fd00::2"}, false, "status.podIPs", "10.89.0.5,fd00:89::5"},
		{"IPv6 node", []string{"fd00::2", "192.0.2.2"}, false, "status.podIPs", "fd00:89::5,10.89.0.5"},
		{"IPv6 node, podIP", []string{"fd00::2", "192.0.2.2"}, false, "status.podIP", "fd00:89::5"},
		{"IPv6 node, hostIPs", []string{"fd00::2", "192.0.2.2"}, false, "status.hostIPs", "fd00::2,192.0.2.2"},
		{"host network", []string{"fd00::2", "192.0.2.2"}, true, "status.podIPs", "fd00::2,192.0.2.2"},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNetwork}}
		got, err := fieldRef(pod, tc.path, runtimeOrder, ConfigOptions{NodeIPs: tc.nodeIPs})
		if err != nil || got != tc.want {
			t.Errorf("%s: %s = %q, %v; want %q", tc.name, tc.path, got, err, tc.want)
		}
	}
}
