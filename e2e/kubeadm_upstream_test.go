//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/upstreamkubelet"
)

// kubeadmUpstreamEnv turns on TestKubeadm's reference run: the cluster is made from a kubeadm
// config file that lets the upstream kubelet run on this host, and a worker running the upstream
// kubelet v1.37.2 joins it after the nodelet worker, so that the two join figures come from one
// run on one cluster. It is a measurement of the upstream kubelet, not a requirement on nodelet.
const kubeadmUpstreamEnv = "NODELET_KUBEADM_UPSTREAM"

// kubeadmUpstreamConfig writes the kubeadm config file of the reference run and returns its path
// (in the node's view; the host's temp dir is the same there). It says what kubeadmInitArgs' flags
// say, plus the KubeletConfiguration document the upstream kubelet needs here
// (upstreamkubelet.KubeadmDocument: cgroup v1 allowed, cgroupfs, no QoS cgroups, no node
// allocatable enforcement, swap allowed). kubeadm stores that document in the cluster's
// kubelet-config ConfigMap and writes it into every node's /var/lib/kubelet/config.yaml, the
// joining workers' too, as for an operator's cluster. nodelet, on the control-plane node and the
// nodelet worker, reads the same file: it warns about the fields it does not honour and runs.
func kubeadmUpstreamConfig(t *testing.T, cp *kubeadmNode) string {
	t.Helper()
	kubelet, err := upstreamkubelet.KubeadmDocument()
	if err != nil {
		t.Fatal(err)
	}
	var skip strings.Builder
	for _, p := range strings.Split(kubeadmSkipPhases, ",") {
		fmt.Fprintf(&skip, "- %s\n", p)
	}
	cfg := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: %s
  criSocket: %s
  # cgroup v1 (SystemVerification), no conntrack/socat/crictl, no systemd on this VM.
  ignorePreflightErrors: [all]
skipPhases:
%s---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
---
%s`, kubeadmCPName, cp.rt.Endpoint, skip.String(), kubeadmVersion, kubelet)
	path := filepath.Join(cp.host.Dir, "kubeadm-config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubeadmJoinUpstream is the reference: a worker whose kubelet is the upstream kubelet v1.37.2,
// started exactly as nodelet is (the drop-in's flags, the config.yaml kubeadm wrote from the
// cluster's ConfigMap), joins cp's cluster with a token as the nodelet worker did
// (kubeadmJoinNode: Ready, InternalIP, bootstrapped client certificate; the MEASURE lines say
// "(kubelet)"). A pod runs on it with kubectl logs and exec; `kubeadm reset` cleans it up.
// Skipped unless NODELET_KUBEADM_UPSTREAM=1.
//
// The upstream kubelet's built-in cAdvisor looks for containerd only at
// /run/containerd/containerd.sock, which the node's private containerd does not serve (binding it
// there would mean creating that file on the machine's shared /run), so cAdvisor's containerd
// factory is not registered on this worker: container stats are missing, which no step here uses.
func kubeadmJoinUpstream(t *testing.T, env kubeadmEnv, cp *kubeadmNode, kubectl func(...string) (string, error), third int) {
	if env.upstream == "" {
		t.Skipf("a reference measurement of the upstream kubelet: %s=1", kubeadmUpstreamEnv)
	}
	const name = "kadm-w2"
	// A second /30 in the worker's /24, and a second link on cp's side.
	w := kubeadmJoinNode(t, env, cp, kubectl, kubeadmWorker{
		node: name, host: "w2",
		link: "eth2", cpIP: fmt.Sprintf("10.111.%d.5", third), nodeIP: fmt.Sprintf("10.111.%d.6", third),
		agent: env.upstream, agentName: "kubelet",
	})
	kubeadmCheckPod(t, kubectl, "kadm-up1", name)
	t.Run("reset", func(t *testing.T) { kubeadmReset(t, env, w) })
}
