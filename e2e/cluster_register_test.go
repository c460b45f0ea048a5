//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestClusterRegistrationOptions drives the registration flags against a real
// API server with the Node authorizer and NodeRestriction: the Node nodelet
// creates carries --register-with-taints, --node-labels, the external cloud
// provider's uninitialized taint and provided-node-ip annotation, and
// --provider-id; labels a node may not set on itself are refused at start;
// with --register-node=false nodelet creates no Node and reports status on
// the one an administrator creates. Also: `nodelet --version` in the form
// kubeadm's preflight parses.
func TestClusterRegistrationOptions(t *testing.T) {
	bin := framework.NodeletBinary(t)

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("nodelet --version: %v: %s", err, out)
		}
		// kubeadm v1.37's expression, over the whole output.
		re := regexp.MustCompile(`^\s*Kubernetes v((0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)([-\w.+]*)?)\s*$`)
		if m := re.FindAllStringSubmatch(strings.TrimSpace(string(out)), -1); len(m) != 1 || !strings.Contains(m[0][1], "+nodelet") {
			t.Errorf("nodelet --version printed %q: not Kubernetes vX.Y.Z+nodelet...", out)
		}
	})

	t.Run("restricted labels refused", func(t *testing.T) {
		for label, want := range map[string]string{
			"node-role.kubernetes.io/worker=":    `"node-role.kubernetes.io/worker" is in the kubernetes.io or k8s.io namespace but not one a node may set`,
			"node-restriction.kubernetes.io/a=b": `"node-restriction.kubernetes.io/a" is in the kubernetes.io or k8s.io namespace but not one a node may set`,
			"example.kubernetes.io/anything=1":   `"example.kubernetes.io/anything" is in the kubernetes.io or k8s.io namespace`,
		} {
			cmd := exec.Command(bin, "--node-labels", "tier=edge,"+label, "--root-dir", t.TempDir())
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("--node-labels %s: err %v, want exit status 2; output %s", label, err, out)
				continue
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("--node-labels %s: output %q does not say %q", label, out, want)
			}
		}
	})

	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := kubeClient(t, cluster.AdminKubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("registered node", func(t *testing.T) {
		n := framework.StartNodelet(t, rt,
			"--kubeconfig", cluster.NodeKubeconfig,
			"--node-ip", "127.0.0.1",
			"--register-with-taints", "e2e.example.com/dedicated=edge:NoSchedule,e2e.example.com/quiet:PreferNoSchedule",
			"--node-labels", "e2e.example.com/team=nodes,node.kubernetes.io/pool=edge,topology.kubernetes.io/zone=z1",
			"--cloud-provider", "external",
			"--provider-id", "e2e://cluster/"+framework.NodeName,
		)
		var node *v1.Node
		poll.Until(t, 60*time.Second, 100*time.Millisecond, "Node registered", func() (bool, string) {
			var err error
			node, err = admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
			return err == nil, fmtErr(err)
		})
		wantTaints := []v1.Taint{
			{Key: "e2e.example.com/dedicated", Value: "edge", Effect: v1.TaintEffectNoSchedule},
			{Key: "e2e.example.com/quiet", Effect: v1.TaintEffectPreferNoSchedule},
			{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: v1.TaintEffectNoSchedule},
		}
		if got := registeredTaints(node); !reflect.DeepEqual(got, wantTaints) {
			t.Errorf("taints %v, want %v (and the API server's node.kubernetes.io ones)", node.Spec.Taints, wantTaints)
		}
		for k, want := range map[string]string{
			"e2e.example.com/team": "nodes", "node.kubernetes.io/pool": "edge", "topology.kubernetes.io/zone": "z1",
			"kubernetes.io/hostname": framework.NodeName,
		} {
			if got := node.Labels[k]; got != want {
				t.Errorf("label %s = %q, want %q (labels %v)", k, got, want, node.Labels)
			}
		}
		if got, want := node.Spec.ProviderID, "e2e://cluster/"+framework.NodeName; got != want {
			t.Errorf("providerID %q, want %q", got, want)
		}
		if got := node.Annotations["alpha.kubernetes.io/provided-node-ip"]; got != "127.0.0.1" {
			t.Errorf("provided-node-ip annotation %q, want 127.0.0.1 (annotations %v)", got, node.Annotations)
		}
		// The cloud controller manager's part, done by hand: it sets the
		// addresses and removes the taint; nodelet keeps both as they are.
		node.Spec.Taints = wantTaints[:2]
		if _, err := admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cloudAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeInternalDNS, Address: "n1.cloud.example"}}
		node, err := admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = cloudAddrs
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A restart of nodelet re-reads the Node: the taint stays removed
		// (taints are set at creation only), the provider's addresses stay.
		n.Stop()
		restarted := time.Now().Truncate(time.Second) // heartbeats have whole seconds
		n.Start()
		poll.Until(t, 60*time.Second, 100*time.Millisecond, "a Ready heartbeat after the restart", func() (bool, string) {
			node, err = admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ready := false
			for _, c := range node.Status.Conditions {
				ready = ready || c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(restarted)
			}
			return ready, "not Ready"
		})
		if got := registeredTaints(node); !reflect.DeepEqual(got, wantTaints[:2]) {
			t.Errorf("taints after restart %v, want the two of --register-with-taints", node.Spec.Taints)
		}
		if !reflect.DeepEqual(node.Status.Addresses, cloudAddrs) {
			t.Errorf("addresses after restart %v, want the provider's %v", node.Status.Addresses, cloudAddrs)
		}
		n.Stop()
	})

	t.Run("register-node=false", func(t *testing.T) {
		if err := admin.CoreV1().Nodes().Delete(ctx, framework.NodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig, "--node-ip", "127.0.0.1", "--register-node=false")
		poll.Until(t, 60*time.Second, 100*time.Millisecond, "nodelet finds no Node and does not create one", func() (bool, string) {
			return strings.Contains(n.Log(), "--register-node=false: nodelet does not create it"), "no such log line yet"
		})
		if _, err := admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get Node: %v, want NotFound: nodelet created it with --register-node=false", err)
		}
		// An administrator creates it: nodelet reports its status.
		if _, err := admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: framework.NodeName,
			Labels: map[string]string{"made-by": "admin"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 90*time.Second, 100*time.Millisecond, "admin-made Node Ready", func() (bool, string) {
			node, err := admin.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range node.Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
					return node.Status.NodeInfo.KubeletVersion != "", "no kubeletVersion"
				}
			}
			return false, "not Ready"
		})
	})
}

// registeredTaints are the Node's taints without those the API server's
// TaintNodesByCondition admission adds (node.kubernetes.io/not-ready: no
// controller manager runs here to remove it).
func registeredTaints(n *v1.Node) []v1.Taint {
	var out []v1.Taint
	for _, t := range n.Spec.Taints {
		if !strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			out = append(out, t)
		}
	}
	return out
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
