//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestClusterNodeAllocatable: with --kube-reserved, --system-reserved and
// --eviction-hard set (small values that fit this machine), the Node's
// allocatable is capacity less all three (memory, ephemeral storage; CPU
// less the reservations), the kubepods cgroup is limited to capacity less
// the reservations only (read from its cgroup files), a pod asking for
// more memory than allocatable is refused OutOfmemory, and a critical
// static pod that does not fit preempts a running lower-priority API pod,
// which goes Failed with reason Preempting, and then runs.
func TestClusterNodeAllocatable(t *testing.T) {
	requireCgroupV1(t)
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig,
		"--kube-reserved", "cpu=300m,memory=1Gi",
		"--system-reserved", "cpu=200m,memory=512Mi,ephemeral-storage=1Gi",
		"--eviction-hard", "memory.available<1Gi,nodefs.available<20%",
		"--enforce-node-allocatable", "pods")
	node := cpWaitNode(t, admin)

	capMem, capCPU, capEph := node.Status.Capacity[v1.ResourceMemory], node.Status.Capacity[v1.ResourceCPU], node.Status.Capacity[v1.ResourceEphemeralStorage]
	wantMem := capMem.Value() - (1<<30 + 512<<20) - 1<<30
	wantCPU := capCPU.MilliValue() - 500
	wantEph := capEph.Value() - 1<<30 - int64(0.2*float64(capEph.Value()))
	alloc := node.Status.Allocatable
	if q := alloc[v1.ResourceMemory]; q.Value() != wantMem {
		t.Errorf("allocatable memory %d, want capacity %d - 1.5Gi reserved - 1Gi eviction = %d", q.Value(), capMem.Value(), wantMem)
	}
	if q := alloc[v1.ResourceCPU]; q.MilliValue() != wantCPU {
		t.Errorf("allocatable cpu %dm, want %dm", q.MilliValue(), wantCPU)
	}
	if q := alloc[v1.ResourceEphemeralStorage]; q.Value() != wantEph {
		t.Errorf("allocatable ephemeral-storage %d, want %d", q.Value(), wantEph)
	}

	// kubepods: capacity less the reservations, not less the eviction
	// threshold; CPU as shares.
	kubepods := n.CgroupRoot + "/kubepods"
	if got, want := cgroupFile(t, "memory", kubepods, "memory.limit_in_bytes"), fmt.Sprint(capMem.Value()-(1<<30+512<<20)); got != want {
		t.Errorf("kubepods memory.limit_in_bytes %s, want %s (capacity - kube/system reserved)", got, want)
	}
	if got, want := cgroupFile(t, "cpu", kubepods, "cpu.shares"), fmt.Sprint(wantCPU*1024/1000); got != want {
		t.Errorf("kubepods cpu.shares %s, want %s", got, want)
	}

	apply := func(name, extra string) { t.Helper(); applyBoundPod(t, cluster, name, extra) }
	withRequests := func(requests string) string {
		return fmt.Sprintf(`  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
    resources: {requests: %s}
`, requests)
	}

	// More memory than allocatable, less than capacity: refused.
	tooBig := resource.NewQuantity(wantMem+(512<<20), resource.BinarySI)
	apply("big", withRequests(fmt.Sprintf("{memory: %q}", tooBig.String())))
	p := cpWaitPod(t, admin, "big", time.Minute, "refused", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodFailed })
	if p.Status.Reason != "OutOfmemory" || !strings.Contains(p.Status.Message, "Node didn't have enough resource: memory") {
		t.Errorf("big: reason %q message %q, want OutOfmemory", p.Status.Reason, p.Status.Message)
	}

	// A lower-priority pod takes most of the CPU; a critical static pod
	// that needs more than is left preempts it.
	low := wantCPU - 200
	apply("low", withRequests(fmt.Sprintf("{cpu: %dm}", low)))
	cpWaitPod(t, admin, "low", 90*time.Second, "running", cpRunningInAPI)
	n.WriteManifest("crit.yaml", podManifest("crit", container("c", "sleep 3600")+"    resources: {requests: {cpu: 500m}}\n"))
	p = cpWaitPod(t, admin, "low", time.Minute, "preempted", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodFailed })
	if p.Status.Reason != "Preempting" || p.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("low: reason %q message %q, want Preempting", p.Status.Reason, p.Status.Message)
	}
	var disrupted bool
	for _, c := range p.Status.Conditions {
		disrupted = disrupted || c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue
	}
	if !disrupted {
		t.Errorf("low: no DisruptionTarget condition: %+v", p.Status.Conditions)
	}
	n.WaitPod("crit"+staticSuffix, 90*time.Second, "critical static pod running", framework.Running)
	poll.Until(t, time.Minute, 100*time.Millisecond, "preempted pod's containers stopped", func() (bool, string) {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				return false, "still running"
			}
		}
		return true, ""
	})
}
