package status

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func TestDualStack(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{nil, nil},
		{[]string{"10.88.0.5"}, []string{"10.88.0.5"}},
		{[]string{"10.88.0.5", "fd00::5"}, []string{"10.88.0.5", "fd00::5"}},
		{[]string{"fd00::5", "10.88.0.5"}, []string{"fd00::5", "10.88.0.5"}},
		{[]string{"10.88.0.5", "10.88.0.6", "fd00::5", "fd00::6"}, []string{"10.88.0.5", "fd00::5"}},
		{[]string{"::ffff:10.1.2.3", "fd00::0005"}, []string{"10.1.2.3", "fd00::5"}},
		{[]string{"garbage", "fd00::5"}, []string{"fd00::5"}},
	} {
		if got := DualStack(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("DualStack(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func ipsOf[T any](list []T, ip func(T) string) []string {
	var out []string
	for _, x := range list {
		out = append(out, ip(x))
	}
	return out
}

// A dual-stack pod shows both of the sandbox's IPs (the CRI's ip and
// additional_ips) in podIPs, a host-network pod both node IPs, and every
// pod both node IPs in hostIPs.
func TestGenerateDualStack(t *testing.T) {
	sandbox := []*runtime.SandboxStatus{{ID: "sb", State: runtime.SandboxStateReady, IP: "10.88.0.5", IPs: []string{"10.88.0.5", "fd00:88::5"}}}
	rs := &runtime.PodStatus{UID: "u", Sandboxes: sandbox, Containers: []*runtime.ContainerStatus{running("a", 0)}}
	hostIPs := []string{"192.0.2.2", "2001:db8::2"}

	pod := specPod(v1.RestartPolicyAlways, "a")
	s := Generate(Input{Pod: pod, Runtime: rs, HostIP: hostIPs[0], HostIPs: hostIPs, Now: t0})
	if got := ipsOf(s.PodIPs, func(p v1.PodIP) string { return p.IP }); !slices.Equal(got, []string{"10.88.0.5", "fd00:88::5"}) || s.PodIP != "10.88.0.5" {
		t.Errorf("pod network: podIP %s podIPs %q", s.PodIP, got)
	}
	if got := ipsOf(s.HostIPs, func(h v1.HostIP) string { return h.IP }); !slices.Equal(got, hostIPs) || s.HostIP != hostIPs[0] {
		t.Errorf("hostIP %s hostIPs %q, want %q", s.HostIP, got, hostIPs)
	}

	host := specPod(v1.RestartPolicyAlways, "a")
	host.Spec.HostNetwork = true
	s = Generate(Input{Pod: host, Runtime: rs, HostIP: hostIPs[0], HostIPs: hostIPs, Now: t0})
	if got := ipsOf(s.PodIPs, func(p v1.PodIP) string { return p.IP }); !slices.Equal(got, hostIPs) || s.PodIP != hostIPs[0] {
		t.Errorf("host network: podIP %s podIPs %q, want the node's %q", s.PodIP, got, hostIPs)
	}

	// A node whose first --node-ip is IPv6: the pod's IPv6 address is its
	// primary, though the runtime reported the IPv4 one first (containerd
	// 1.6 always does).
	hostIPs6 := []string{"2001:db8::2", "192.0.2.2"}
	s = Generate(Input{Pod: pod, Runtime: rs, HostIP: hostIPs6[0], HostIPs: hostIPs6, Now: t0})
	if got := ipsOf(s.PodIPs, func(p v1.PodIP) string { return p.IP }); !slices.Equal(got, []string{"fd00:88::5", "10.88.0.5"}) || s.PodIP != "fd00:88::5" {
		t.Errorf("IPv6-primary node: podIP %s podIPs %q, want IPv6 first", s.PodIP, got)
	}
	if got := ipsOf(s.HostIPs, func(h v1.HostIP) string { return h.IP }); !slices.Equal(got, hostIPs6) || s.HostIP != hostIPs6[0] {
		t.Errorf("IPv6-primary node: hostIP %s hostIPs %q, want %q", s.HostIP, got, hostIPs6)
	}

	// Single stack, HostIPs not given: as before.
	s = Generate(Input{Pod: pod, Runtime: &runtime.PodStatus{UID: "u", Sandboxes: readySandbox()}, HostIP: "192.0.2.2", Now: t0})
	if len(s.PodIPs) != 1 || s.PodIP != "10.88.0.5" || len(s.HostIPs) != 1 || s.HostIP != "192.0.2.2" {
		t.Errorf("single stack: podIPs %v hostIPs %v", s.PodIPs, s.HostIPs)
	}
}
