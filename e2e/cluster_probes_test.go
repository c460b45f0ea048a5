//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestClusterReadiness checks that readiness reaches the API: a pod whose
// readiness probe starts failing turns Ready=False in the API, and a
// readiness gate set by someone else holds Ready back until it is True.
// How long the API took after the probe result is logged ("measured:").
func TestClusterReadiness(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	client := framework.CRIClient(t, rt)
	ctx := context.Background()
	pods := admin.CoreV1().Pods("default")

	isReady := func(want v1.ConditionStatus) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool { return p != nil && podCondition(p, v1.PodReady) == want && framework.Running(p) }
	}

	t.Run("ReadinessProbeFlipsReady", func(t *testing.T) {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "ready-probe", Namespace: "default"},
			Spec: v1.PodSpec{
				NodeName: framework.NodeName, AutomountServiceAccountToken: ptr.To(false),
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []v1.Container{{Name: "app", Image: "busybox:1.35",
					Command: []string{"sh", "-c", "touch /tmp/ready; exec sleep 3600"},
					ReadinessProbe: &v1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
						ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}},
				}},
			},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p = cpWaitPod(t, admin, "ready-probe", 60*time.Second, "Ready", isReady(v1.ConditionTrue))

		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		w, err := pods.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "ready-probe").String(),
			ResourceVersion: p.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		execIn(t, client, p, "rm", "/tmp/ready")
		var flipped time.Time
		for ev := range w.ResultChan() {
			if q, ok := ev.Object.(*v1.Pod); ok && podCondition(q, v1.PodReady) == v1.ConditionFalse {
				flipped = time.Now()
				if cs := framework.ContainerStatus(q, "app"); cs == nil || cs.Ready {
					t.Errorf("Ready=False but container status %+v", cs)
				}
				break
			}
		}
		if flipped.IsZero() {
			t.Fatal("Ready never turned False in the API")
		}
		if at, ok := probeResultTime(n.Log(), "ready-probe"); ok {
			t.Logf("measured: readiness probe result -> Ready=False seen in the API: %s", flipped.Sub(at).Round(time.Millisecond))
		}

		execIn(t, client, p, "touch", "/tmp/ready")
		cpWaitPod(t, admin, "ready-probe", 30*time.Second, "Ready again", isReady(v1.ConditionTrue))
		_ = pods.Delete(ctx, "ready-probe", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	})

	t.Run("ReadinessGate", func(t *testing.T) {
		const gate = "example.com/load-balancer"
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: "default"},
			Spec: v1.PodSpec{
				NodeName: framework.NodeName, AutomountServiceAccountToken: ptr.To(false),
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				ReadinessGates:                []v1.PodReadinessGate{{ConditionType: gate}},
				Containers:                    []v1.Container{{Name: "app", Image: "busybox:1.35", Command: []string{"sleep", "3600"}}},
			},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p = cpWaitPod(t, admin, "gated", 60*time.Second, "Running, Ready=False for the gate", func(p *v1.Pod) bool {
			return isReady(v1.ConditionFalse)(p) && podCondition(p, v1.ContainersReady) == v1.ConditionTrue
		})
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Reason != "ReadinessGatesNotReady" {
				t.Errorf("Ready condition %+v, want reason ReadinessGatesNotReady", c)
			}
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{
			{"type": gate, "status": "True", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}})
		if _, err := pods.Patch(ctx, "gated", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		cpWaitPod(t, admin, "gated", 30*time.Second, "Ready once the gate is True", isReady(v1.ConditionTrue))
		_ = pods.Delete(ctx, "gated", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	})

	t.Run("TerminatingPodTurnsNotReady", func(t *testing.T) {
		if _, err := cluster.KubectlInput(cpPodYAML("slow-stop", "trap 'sleep 5; exit 0' TERM; while true; do sleep 0.1; done", 30), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		cpWaitPod(t, admin, "slow-stop", 60*time.Second, "Ready", isReady(v1.ConditionTrue))
		if err := pods.Delete(ctx, "slow-stop", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		p := cpWaitPod(t, admin, "slow-stop", 30*time.Second, "not ready while terminating", func(p *v1.Pod) bool {
			return p == nil || podCondition(p, v1.PodReady) == v1.ConditionFalse
		})
		if p == nil || p.Status.Phase != v1.PodRunning || !framework.Running(p) {
			t.Fatalf("want a pod still running its 5 s of shutdown, not ready; got %+v", p)
		}
	})
}

// probeResultTime finds, in a nodelet log (klog text format), when the
// probe result that turned the pod's container not ready was recorded.
func probeResultTime(log, pod string) (time.Time, bool) {
	var last time.Time
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, "Probe result changed container state") || !strings.Contains(l, pod) || !strings.Contains(l, "ready=false") {
			continue
		}
		// "I1203 09:20:00.123456 ..." (the year is not in klog's header).
		f := strings.Fields(l)
		if len(f) < 2 || len(f[0]) < 5 {
			continue
		}
		ts, err := time.ParseInLocation("0102 15:04:05.000000", f[0][1:]+" "+f[1], time.Local)
		if err != nil {
			continue
		}
		now := time.Now()
		last = ts.AddDate(now.Year(), 0, 0)
	}
	return last, !last.IsZero()
}
