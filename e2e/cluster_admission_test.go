//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestClusterAdmissionFit: pods bound to the node directly (nodeName set,
// no scheduler) that do not fit are refused before anything starts, with
// upstream's Failed phase and reasons, and do not count against the pods
// that run: more CPU than the node has (OutOfcpu), a node selector the
// node does not match (NodeAffinity), a host port already taken
// (NodePorts), one pod over --max-pods (OutOfpods).
func TestClusterAdmissionFit(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig, "--max-pods", "3")
	cpWaitNode(t, admin)

	apply := func(name, extra string) { t.Helper(); applyBoundPod(t, cluster, name, extra) }
	container := func(resources, ports string) string {
		return fmt.Sprintf(`  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
%s%s`, resources, ports)
	}
	refused := func(name, reason, message string) {
		t.Helper()
		p := cpWaitPod(t, admin, name, time.Minute, "refused", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		if p.Status.Reason != reason || !strings.Contains(p.Status.Message, message) || len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
			t.Errorf("%s: phase %s reason %q message %q, want %s with %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message, reason, message)
		}
	}

	apply("web", container("", "    ports: [{containerPort: 80, hostPort: 18080}]\n"))
	cpWaitPod(t, admin, "web", 90*time.Second, "running", cpRunningInAPI)

	apply("huge", container("    resources: {requests: {cpu: \"1000\"}}\n", ""))
	refused("huge", "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000000")
	apply("elsewhere", "  nodeSelector: {zone: nowhere}\n"+container("", ""))
	refused("elsewhere", "NodeAffinity", "Predicate NodeAffinity failed")
	apply("port", container("", "    ports: [{containerPort: 80, hostPort: 18080}]\n"))
	refused("port", "NodePorts", "didn't have free ports")

	// The refused pods do not count: two more fit under --max-pods 3, the
	// next does not.
	apply("second", container("", ""))
	apply("third", container("", ""))
	cpWaitPod(t, admin, "second", 90*time.Second, "running", cpRunningInAPI)
	cpWaitPod(t, admin, "third", 90*time.Second, "running", cpRunningInAPI)
	apply("fourth", container("", ""))
	refused("fourth", "OutOfpods", "requested: 1, used: 3, capacity: 3")
}

// applyBoundPod applies, with kubectl, pod name in the default namespace
// bound to the test node (no scheduler, no token), extra being the rest of
// its spec.
func applyBoundPod(t *testing.T, cluster *framework.Cluster, name, extra string) {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
%s`, name, framework.NodeName, extra)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("%s: %v: %s", name, err, out)
	}
}
