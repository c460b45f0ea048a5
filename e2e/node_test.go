//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestNodeRegistrationLeaseAndEvents starts nodelet as a cluster member
// (node credentials: Node authorizer + NodeRestriction) and checks what
// kubectl sees: the Node registered and Ready with its labels, capacity,
// addresses and nodeInfo; the Lease renewed; the Node back within seconds
// after kubectl delete; the node events.
func TestNodeRegistrationLeaseAndEvents(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := kubeClient(t, cluster.AdminKubeconfig)
	port := framework.FreePort(t)

	// Watch for Ready from before nodelet starts, so the time to Ready is
	// measured from the process start, not from a poll.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	readyAt := watchNodeReady(ctx, t, admin)

	n := framework.NewNodelet(t, rt, // builds the binary: before the clock starts
		"--kubeconfig", cluster.NodeKubeconfig,
		"--client-ca-file", cluster.CAFile,
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", strconv.Itoa(port),
		"--node-labels", "nodelet.example.com/role=e2e,tier=edge",
	)
	start := time.Now()
	n.Start()
	healthy := time.Since(start)
	var ready time.Time
	select {
	case ready = <-readyAt:
	case <-time.After(60 * time.Second):
		t.Fatalf("node not Ready 60 s after start; kubectl get node: %s", kubectlOut(cluster, "get", "node", "-o", "wide"))
	}
	t.Logf("MEASURE nodelet start -> Node Ready: %s (healthz answered after %s)", ready.Sub(start).Round(time.Millisecond), healthy.Round(time.Millisecond))

	node := kubectlNode(t, cluster)
	t.Run("node object", func(t *testing.T) {
		for k, want := range map[string]string{
			"kubernetes.io/hostname": framework.NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"beta.kubernetes.io/os": "linux", "nodelet.example.com/role": "e2e", "tier": "edge",
		} {
			if got := node.Labels[k]; got != want {
				t.Errorf("label %s = %q, want %q (labels %v)", k, got, want, node.Labels)
			}
		}
		if pods := node.Status.Capacity[v1.ResourcePods]; pods.Value() != 110 {
			t.Errorf("capacity pods = %s, want 110", pods.String())
		}
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods} {
			c, a := node.Status.Capacity[r], node.Status.Allocatable[r]
			if c.Sign() <= 0 || a.Sign() <= 0 || a.Cmp(c) > 0 {
				t.Errorf("%s: capacity %s allocatable %s", r, c.String(), a.String())
			}
		}
		wantAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: framework.NodeName}}
		if fmt.Sprint(node.Status.Addresses) != fmt.Sprint(wantAddrs) {
			t.Errorf("addresses %v, want %v", node.Status.Addresses, wantAddrs)
		}
		if got := node.Status.DaemonEndpoints.KubeletEndpoint.Port; got != int32(port) {
			t.Errorf("daemonEndpoints.kubeletEndpoint.port = %d, want %d", got, port)
		}
		info := node.Status.NodeInfo
		if want := nodeletVersion(t, n); info.KubeletVersion != want {
			t.Errorf("kubeletVersion %q, want nodelet's own %q", info.KubeletVersion, want)
		}
		// The Kubernetes release with nodelet's version as build metadata,
		// as k3s does: what kubeadm and the skew policy compare.
		if !kubeletVersionRE.MatchString(info.KubeletVersion) {
			t.Errorf("kubeletVersion %q is not vX.Y.Z+nodelet...", info.KubeletVersion)
		}
		if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") || info.KernelVersion == "" ||
			info.OSImage == "" || info.BootID == "" || info.OperatingSystem != "linux" || info.Architecture != "amd64" {
			t.Errorf("nodeInfo %+v", info)
		}
		for _, c := range node.Status.Conditions {
			want := v1.ConditionFalse
			if c.Type == v1.NodeReady {
				want = v1.ConditionTrue
			}
			if c.Status != want || c.LastHeartbeatTime.IsZero() || c.Reason == "" {
				t.Errorf("condition %+v", c)
			}
		}
		if len(node.Status.Conditions) != 4 {
			t.Errorf("conditions %+v", node.Status.Conditions)
		}
		if len(node.Status.Images) == 0 {
			t.Errorf("no images in status")
		}
		out := kubectlOut(cluster, "get", "nodes")
		if !regexp.MustCompile(framework.NodeName + `\s+Ready\s`).MatchString(out) {
			t.Errorf("kubectl get nodes:\n%s", out)
		}
		t.Logf("kubectl get nodes -o wide:\n%s", kubectlOut(cluster, "get", "nodes", "-o", "wide"))
	})

	t.Run("lease renewed", func(t *testing.T) {
		first := kubectlLease(t, cluster)
		if first.Spec.HolderIdentity == nil || *first.Spec.HolderIdentity != framework.NodeName ||
			first.Spec.LeaseDurationSeconds == nil || *first.Spec.LeaseDurationSeconds != 40 || first.Spec.RenewTime == nil {
			t.Fatalf("lease spec %+v", first.Spec)
		}
		if len(first.OwnerReferences) != 1 || first.OwnerReferences[0].Kind != "Node" || first.OwnerReferences[0].UID != node.UID {
			t.Errorf("lease owners %+v, want the Node %s", first.OwnerReferences, node.UID)
		}
		var renewed *coordinationv1.Lease
		poll.Within(t, 20*time.Second, "the lease renewed", func() (bool, string) {
			renewed = kubectlLease(t, cluster)
			return renewed.Spec.RenewTime.After(first.Spec.RenewTime.Time), renewed.Spec.RenewTime.String()
		})
		t.Logf("MEASURE lease renewTime advanced by %s", renewed.Spec.RenewTime.Sub(first.Spec.RenewTime.Time).Round(time.Millisecond))
	})

	t.Run("deleted node comes back", func(t *testing.T) {
		if _, err := cluster.Kubectl("delete", "node", framework.NodeName, "--wait=false"); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		var back *v1.Node
		poll.Within(t, 30*time.Second, "the Node re-registered and Ready", func() (bool, string) {
			out, err := cluster.Kubectl("get", "node", framework.NodeName, "-o", "json")
			if err != nil {
				return false, err.Error()
			}
			back = &v1.Node{}
			if err := json.Unmarshal([]byte(out), back); err != nil {
				return false, err.Error()
			}
			return back.UID != node.UID && nodeReady(back), fmt.Sprint(back.UID, " ", back.Status.Conditions)
		})
		took := time.Since(deleted)
		t.Logf("MEASURE kubectl delete node -> Node back and Ready: %s", took.Round(time.Millisecond))
		if took > 15*time.Second {
			t.Errorf("Node came back after %s: the watch should bring it back within seconds", took)
		}
		if back.Labels["tier"] != "edge" || back.Labels["kubernetes.io/hostname"] != framework.NodeName {
			t.Errorf("labels of the re-created Node %v", back.Labels)
		}
		poll.Within(t, 20*time.Second, "the lease owned by the new Node", func() (bool, string) {
			l := kubectlLease(t, cluster)
			return len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == back.UID, fmt.Sprint(l.OwnerReferences)
		})
	})

	t.Run("events", func(t *testing.T) {
		want := []string{"Starting", "RegisteredNode", "NodeReady", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"}
		var seen map[string]int
		poll.Within(t, 30*time.Second, "node events", func() (bool, string) {
			out, err := cluster.Kubectl("get", "events", "-n", "default",
				"--field-selector", "involvedObject.kind=Node,involvedObject.name="+framework.NodeName, "-o", "json")
			if err != nil {
				return false, err.Error()
			}
			var list v1.EventList
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				return false, err.Error()
			}
			seen = map[string]int{}
			for _, e := range list.Items {
				if e.Source.Component == "kubelet" && e.Source.Host == framework.NodeName {
					seen[e.Reason] += int(max(e.Count, 1))
				}
			}
			for _, r := range want {
				if seen[r] == 0 {
					return false, fmt.Sprint(seen)
				}
			}
			// Registered twice: at start and after the delete.
			return seen["RegisteredNode"] >= 2, fmt.Sprint(seen)
		})
		t.Logf("node events: %v", seen)
		t.Logf("kubectl get events:\n%s", kubectlOut(cluster, "get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Node"))
	})

	// Everything above was done with the node's own credentials: a refusal
	// by the Node authorizer or NodeRestriction would show up as a failed
	// status update or lease renewal.
	for _, line := range strings.Split(n.Log(), "\n") {
		if strings.Contains(line, "Node status update failed") || strings.Contains(line, "Failed to renew the node lease") {
			t.Errorf("nodelet: %s", line)
		}
	}
}

// watchNodeReady reports the moment the test's Node is first seen Ready.
func watchNodeReady(ctx context.Context, t *testing.T, c kubernetes.Interface) <-chan time.Time {
	t.Helper()
	sel := fields.OneTermEqualSelector("metadata.name", framework.NodeName).String()
	w, err := c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan time.Time, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*v1.Node); ok && ev.Type != watch.Deleted && nodeReady(n) {
				out <- time.Now()
				return
			}
		}
	}()
	return out
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func kubectlOut(c *framework.Cluster, args ...string) string {
	out, err := c.Kubectl(args...)
	if err != nil {
		return err.Error()
	}
	return out
}

func kubectlNode(t *testing.T, c *framework.Cluster) *v1.Node {
	t.Helper()
	out, err := c.Kubectl("get", "node", framework.NodeName, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	n := &v1.Node{}
	if err := json.Unmarshal([]byte(out), n); err != nil {
		t.Fatal(err)
	}
	return n
}

func kubectlLease(t *testing.T, c *framework.Cluster) *coordinationv1.Lease {
	t.Helper()
	out, err := c.Kubectl("get", "lease", "-n", "kube-node-lease", framework.NodeName, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	l := &coordinationv1.Lease{}
	if err := json.Unmarshal([]byte(out), l); err != nil {
		t.Fatal(err)
	}
	return l
}

// leaseRetryRE finds the delay of a failed lease renewal's retry.
var leaseRetryRE = regexp.MustCompile(`"Failed to renew the node lease, will retry".* in="([^"]+)"`)

// kubeletVersionRE is the form of the version nodelet reports.
var kubeletVersionRE = regexp.MustCompile(`^v1\.\d+\.\d+\+nodelet(\.[0-9A-Za-z-]+)*$`)

// nodeVersionRE finds the version nodelet logs at start.
var nodeVersionRE = regexp.MustCompile(`"Starting nodelet" version="([^"]+)"`)

func nodeletVersion(t *testing.T, n *framework.Nodelet) string {
	t.Helper()
	m := nodeVersionRE.FindStringSubmatch(n.Log())
	if m == nil {
		t.Fatal("nodelet did not log its version")
	}
	return m[1]
}

// TestNodeCatchesUpAfterAPIOutage puts a TCP proxy between nodelet and the
// API server and cuts it: down at start (nodelet starts anyway, the static
// pod runs, no Node yet), then up (the Node registers and goes Ready), then
// down again for longer than a renew period (pods keep running), then up
// (the Lease is renewed again).
func TestNodeCatchesUpAfterAPIOutage(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := kubeClient(t, cluster.AdminKubeconfig)
	proxy := startNodeProxy(t, strings.TrimPrefix(cluster.Server, "https://"))
	kubeconfig := filepath.Join(t.TempDir(), "node-via-proxy.kubeconfig")
	raw, err := os.ReadFile(cluster.NodeKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), cluster.Server) {
		t.Fatalf("%s does not name %s", cluster.NodeKubeconfig, cluster.Server)
	}
	if err := os.WriteFile(kubeconfig, []byte(strings.ReplaceAll(string(raw), cluster.Server, "https://"+proxy.addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	n := framework.NewNodelet(t, rt, "--kubeconfig", kubeconfig, "--client-ca-file", cluster.CAFile,
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", strconv.Itoa(framework.FreePort(t)))
	n.WriteManifest("outage.yaml", podManifest("outage", container("c", "sleep 3600")))
	n.Start()
	staticPod := "outage" + staticSuffix
	n.WaitPod(staticPod, 60*time.Second, "the static pod running with the API server unreachable", framework.Running)
	if _, err := admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{}); err == nil {
		t.Fatal("Node registered through a closed proxy")
	}

	readyAt := watchNodeReady(ctx, t, admin)
	up := time.Now()
	proxy.setUp(true)
	select {
	case at := <-readyAt:
		t.Logf("MEASURE API server reachable -> Node Ready: %s", at.Sub(up).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("node not Ready 30 s after the API server became reachable")
	}
	var before *coordinationv1.Lease
	poll.Within(t, 20*time.Second, "the lease", func() (bool, string) {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, framework.NodeName, metav1.GetOptions{})
		before = l
		return err == nil, fmt.Sprint(err)
	})

	logged := len(n.Log())
	proxy.setUp(false)
	cut := time.Now()
	// The outage lasts until a failed renewal is retried at the backoff cap
	// (7 s): longer than a renew period, with the backoff at its top.
	poll.Within(t, 60*time.Second, "a lease renewal retried at the 7 s backoff cap", func() (bool, string) {
		for _, m := range leaseRetryRE.FindAllStringSubmatch(n.Log()[logged:], -1) {
			if d, err := time.ParseDuration(m[1]); err == nil && d >= 7*time.Second {
				return true, ""
			}
		}
		return false, fmt.Sprintf("outage of %s so far", time.Since(cut).Round(time.Second))
	})
	if p, err := n.Pod(staticPod); err != nil || !framework.Running(p) {
		t.Errorf("static pod during the outage: %v %v", p, err)
	}
	l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, framework.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime.After(cut.Add(time.Second)) {
		t.Errorf("lease renewed at %s through a closed proxy (cut at %s)", l.Spec.RenewTime, cut)
	}

	proxy.setUp(true)
	restored := time.Now()
	poll.Within(t, 30*time.Second, "the lease renewed after the outage", func() (bool, string) {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(restored), l.Spec.RenewTime.String()
	})
	t.Logf("MEASURE API server back -> lease renewed: %s (renewTime before the outage %s)", time.Since(restored).Round(time.Millisecond), before.Spec.RenewTime)
	node, err := admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
	if err != nil || !nodeReady(node) {
		t.Errorf("node after the outage: %v %v", err, node.Status.Conditions)
	}
}

// nodeProxy forwards TCP to target while up; while down it closes every
// connection, open or new, as an unreachable API server would fail them.
type nodeProxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]bool
}

func startNodeProxy(t *testing.T, target string) *nodeProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &nodeProxy{l: l, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { l.Close(); p.setUp(false) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *nodeProxy) addr() string { return p.l.Addr().String() }

func (p *nodeProxy) setUp(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}

func (p *nodeProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.up {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *nodeProxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}
