//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// The node's own addresses for the dual-stack test, on a veth the test
// creates: documentation/ULA ranges no route of the host uses.
const (
	dsLink   = "nlds0"
	dsNodeV4 = "198.51.100.2"
	dsNodeV6 = "fd00:8a::2"
)

// TestClusterDualStack: nodelet as a cluster member on a dual-stack pod
// network (bridge + host-local with an IPv4 and an IPv6 range) with a
// dual-stack --node-ip. The Node reports both InternalIPs in --node-ip's
// order; a pod-network pod gets one address of each family from CNI, shown
// in status.podIPs (and the downward API) with the family of the first
// --node-ip first, as upstream orders them, and both node IPs in
// status.hostIPs; a host-network pod gets the node IPs. Run twice: IPv4
// first, then IPv6 first, which containerd 1.6 (always IPv4 first) does not
// give by itself. The runtime's teardown removes the bridge, the IPv6 and
// IPv4 reservations and NAT rules and puts IPv6 forwarding back.
func TestClusterDualStack(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/net/ipv6/conf/all/disable_ipv6"); err != nil || strings.TrimSpace(string(b)) != "0" {
		framework.RequireRealParts(t, "IPv6", fmt.Errorf("net.ipv6.conf.all.disable_ipv6 = %q (%v)", strings.TrimSpace(string(b)), err))
	}
	network := framework.DualStackNetwork
	dsCheckTeardown(t, network)
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntimeWithNetwork(t, network)
	admin := cpClient(t, cluster.AdminKubeconfig)
	dsNodeAddresses(t)

	v4Range, v6Range := netip.MustParsePrefix(network.Subnet), netip.MustParsePrefix(network.Subnet6)
	for _, tc := range []struct {
		name    string
		nodeIPs []string
		// podFirst is the range status.podIPs[0] comes from.
		podFirst, podSecond netip.Prefix
		// leave the pod-network pod running: the runtime's teardown must
		// then release its two addresses and its NAT rules itself.
		leave bool
	}{
		{"ipv4-first", []string{dsNodeV4, dsNodeV6}, v4Range, v6Range, false},
		{"ipv6-first", []string{dsNodeV6, dsNodeV4}, v6Range, v4Range, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig, "--node-ip", strings.Join(tc.nodeIPs, ","))
			dsWaitAddresses(t, admin, tc.nodeIPs)

			p := dsRunPod(t, admin, "ds-"+tc.name, false)
			podIPs := dsPodIPs(p)
			if len(podIPs) != 2 || !tc.podFirst.Contains(netip.MustParseAddr(podIPs[0])) || !tc.podSecond.Contains(netip.MustParseAddr(podIPs[1])) {
				t.Fatalf("podIPs %q, want one from %s then one from %s", podIPs, tc.podFirst, tc.podSecond)
			}
			if p.Status.PodIP != podIPs[0] {
				t.Errorf("podIP %s, want podIPs[0] %s", p.Status.PodIP, podIPs[0])
			}
			dsCheckHostIPs(t, p, tc.nodeIPs)
			log := dsWaitLog(t, n, p, "PODIPS=")
			want := fmt.Sprintf("PODIPS=%s PODIP=%s HOSTIPS=%s", strings.Join(podIPs, ","), podIPs[0], strings.Join(tc.nodeIPs, ","))
			if !strings.Contains(log, want) {
				t.Errorf("downward API env: want %q in the container's output:\n%s", want, log)
			}
			// The addresses are the ones CNI gave the container's eth0, each
			// reserved in the network's IPAM store and masqueraded by its
			// family's NAT table.
			for _, ip := range podIPs {
				if !strings.Contains(log, " "+ip+"/") {
					t.Errorf("pod IP %s is not on the container's eth0:\n%s", ip, log)
				}
				if _, err := os.Stat(filepath.Join("/run/nodelet/ipam", network.Name, ip)); err != nil {
					t.Errorf("no IPAM reservation for pod IP %s: %v", ip, err)
				}
			}
			for _, cmd := range []string{"iptables", "ip6tables"} {
				if out, _ := exec.Command(cmd, "-t", "nat", "-S").CombinedOutput(); !strings.Contains(string(out), `name: \"`+network.Name+`\"`) {
					t.Errorf("no %s NAT rule for network %s:\n%s", cmd, network.Name, out)
				}
			}

			h := dsRunPod(t, admin, "ds-host-"+tc.name, true)
			if got := dsPodIPs(h); !slices.Equal(got, tc.nodeIPs) || h.Status.PodIP != tc.nodeIPs[0] {
				t.Errorf("host-network pod: podIP %s podIPs %q, want the node's %q", h.Status.PodIP, got, tc.nodeIPs)
			}
			dsCheckHostIPs(t, h, tc.nodeIPs)
			want = fmt.Sprintf("PODIPS=%s PODIP=%s HOSTIPS=%s", strings.Join(tc.nodeIPs, ","), tc.nodeIPs[0], strings.Join(tc.nodeIPs, ","))
			if log := dsWaitLog(t, n, h, "PODIPS="); !strings.Contains(log, want) {
				t.Errorf("host-network pod's downward API env: want %q in:\n%s", want, log)
			}
			t.Logf("--node-ip %s: node addresses %s; pod IPs %q; host-network pod IPs %q", strings.Join(tc.nodeIPs, ","),
				strings.Join(tc.nodeIPs, ","), podIPs, dsPodIPs(h))

			// Gone before the next nodelet: a pod's IPs are not to change
			// under it, and the next run starts from an empty node.
			gone := []string{p.Name, h.Name}
			if tc.leave {
				gone = gone[1:]
			}
			for _, name := range gone {
				if err := admin.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
					t.Fatal(err)
				}
				cpWaitPod(t, admin, name, 60*time.Second, "deleted", func(p *v1.Pod) bool { return p == nil })
			}
		})
		if t.Failed() {
			return
		}
	}
}

// dsNodeAddresses puts the node IPs on a veth pair of their own for the
// test's duration: nodelet's --node-ip names addresses the host has, as on a
// real dual-stack node.
func dsNodeAddresses(t *testing.T) {
	t.Helper()
	run := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	_ = run("link", "del", dsLink) // left by a killed run
	if err := run("link", "add", dsLink, "type", "veth", "peer", "name", dsLink+"p"); err != nil {
		framework.RequireRealParts(t, "a veth for the node's addresses", err)
	}
	t.Cleanup(func() {
		if err := run("link", "del", dsLink); err != nil {
			t.Errorf("remove the node addresses' link: %v", err)
		}
	})
	for _, args := range [][]string{
		{"link", "set", dsLink + "p", "up"},
		{"link", "set", dsLink, "up"},
		{"addr", "add", dsNodeV4 + "/32", "dev", dsLink},
		// nodad: usable at once, no duplicate address detection to wait for.
		{"-6", "addr", "add", dsNodeV6 + "/128", "dev", dsLink, "nodad"},
	} {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
}

// dsCheckTeardown registers, before the runtime starts (so it runs after
// the runtime's teardown), a check that nothing of the dual-stack network
// stays on the host, and that IPv6 forwarding is as it was.
func dsCheckTeardown(t *testing.T, net framework.RuntimeNetwork) {
	t.Helper()
	fwd := func() string {
		b, _ := os.ReadFile("/proc/sys/net/ipv6/conf/all/forwarding")
		return strings.TrimSpace(string(b))
	}
	before := fwd()
	t.Cleanup(func() {
		if _, err := os.Stat("/sys/class/net/" + net.Bridge); err == nil {
			t.Errorf("bridge %s left behind", net.Bridge)
		}
		if _, err := os.Stat(filepath.Join("/run/nodelet/ipam", net.Name)); err == nil {
			t.Errorf("IP reservations of network %s left behind", net.Name)
		}
		for _, cmd := range []string{"iptables", "ip6tables"} {
			out, err := exec.Command(cmd, "-t", "nat", "-S").CombinedOutput()
			if err != nil {
				t.Errorf("%s -t nat -S: %v: %s", cmd, err, out)
				continue
			}
			if strings.Contains(string(out), `name: \"`+net.Name+`\"`) {
				t.Errorf("%s NAT rules of network %s left behind:\n%s", cmd, net.Name, out)
			}
		}
		if got := fwd(); got != before {
			t.Errorf("net.ipv6.conf.all.forwarding is %s after the teardown, was %s", got, before)
		}
	})
}

// dsWaitAddresses waits for the Node's addresses to be the node IPs as
// InternalIPs, in order, then its Hostname.
func dsWaitAddresses(t *testing.T, admin kubernetes.Interface, nodeIPs []string) {
	t.Helper()
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "node addresses "+strings.Join(nodeIPs, ","), func() (bool, string) {
		node, err := admin.CoreV1().Nodes().Get(context.Background(), framework.NodeName, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, "no node yet"
			}
			t.Fatal(err)
		}
		var internal []string
		hostname := false
		for _, a := range node.Status.Addresses {
			switch a.Type {
			case v1.NodeInternalIP:
				internal = append(internal, a.Address)
			case v1.NodeHostName:
				hostname = true
			}
		}
		return slices.Equal(internal, nodeIPs) && hostname, fmt.Sprintf("addresses %v", node.Status.Addresses)
	})
}

// dsRunPod creates a busybox pod that prints its downward API IPs (and,
// on the pod network, its eth0 addresses) and waits for it to run.
func dsRunPod(t *testing.T, admin kubernetes.Interface, name string, hostNetwork bool) *v1.Pod {
	t.Helper()
	field := func(env, path string) v1.EnvVar {
		return v1.EnvVar{Name: env, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
	}
	script := `echo "PODIPS=$PODIPS PODIP=$PODIP HOSTIPS=$HOSTIPS"; `
	if !hostNetwork {
		script += "ip -o addr show dev eth0; "
	}
	script += "exec sleep 3600"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      framework.NodeName,
			HostNetwork:                   hostNetwork,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []v1.Container{{
				Name: "app", Image: "busybox:1.35", Command: []string{"sh", "-c", script},
				Env: []v1.EnvVar{field("PODIPS", "status.podIPs"), field("PODIP", "status.podIP"), field("HOSTIPS", "status.hostIPs")},
			}},
		},
	}
	if _, err := admin.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return cpWaitPod(t, admin, name, 60*time.Second, "Running with its IPs", func(p *v1.Pod) bool {
		return cpRunningInAPI(p) && len(p.Status.PodIPs) == 2
	})
}

func dsPodIPs(p *v1.Pod) []string {
	var out []string
	for _, ip := range p.Status.PodIPs {
		out = append(out, ip.IP)
	}
	return out
}

func dsCheckHostIPs(t *testing.T, p *v1.Pod, nodeIPs []string) {
	t.Helper()
	var got []string
	for _, ip := range p.Status.HostIPs {
		got = append(got, ip.IP)
	}
	if !slices.Equal(got, nodeIPs) || p.Status.HostIP != nodeIPs[0] {
		t.Errorf("pod %s: hostIP %s hostIPs %q, want %q", p.Name, p.Status.HostIP, got, nodeIPs)
	}
}

// dsWaitLog waits for want in the pod's container log and returns the log.
func dsWaitLog(t *testing.T, n *framework.Nodelet, p *v1.Pod, want string) string {
	t.Helper()
	file := filepath.Join(criconfig.PodLogDir(n.LogDir, "default", p.Name, p.UID), criconfig.ContainerLogPath("app", 0))
	var log string
	poll.Within(t, 30*time.Second, "pod "+p.Name+" printing "+want, func() (bool, string) {
		b, _ := os.ReadFile(file)
		log = criLogText(string(b))
		// The eth0 lines come right after the env line; wait for them too.
		return strings.Contains(log, want) && (p.Spec.HostNetwork || strings.Contains(log, "inet6")), log
	})
	return log
}
