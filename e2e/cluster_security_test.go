//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestClusterSecurity checks the security refusals of API pods: the
// refused pod is Failed in the API with upstream's reason and an event,
// and a pod's RuntimeClass is looked up in the API and its handler used.
func TestClusterSecurity(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	ctx := context.Background()

	withSpec := func(name, extra string) string {
		y := cpPodYAML(name, "sleep 3600", 1)
		return strings.Replace(y, "spec:\n", "spec:\n"+extra, 1)
	}

	t.Run("SysctlForbidden", func(t *testing.T) {
		y := withSpec("sysctl-forbidden", "  securityContext:\n    sysctls: [{name: kernel.msgmax, value: \"10000\"}]\n")
		if _, err := cluster.KubectlInput(y, "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		p := cpWaitPod(t, admin, "sysctl-forbidden", 60*time.Second, "Failed with SysctlForbidden", func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "SysctlForbidden"
		})
		if want := `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`; p.Status.Message != want {
			t.Errorf("message %q, want %q", p.Status.Message, want)
		}
		cpWaitDescribeEvents(t, cluster, "sysctl-forbidden", "SysctlForbidden")

		// A restarted nodelet allowed the sysctl still never runs the pod.
		n.Stop()
		n.Args = append(n.Args, "--allowed-unsafe-sysctls", "kernel.msgmax")
		n.Start()
		probe := withSpec("after-restart", "")
		if _, err := cluster.KubectlInput(probe, "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		// Once a pod created after the restart runs, the refused one was seen.
		cpWaitPod(t, admin, "after-restart", 60*time.Second, "Running", cpRunningInAPI)
		sbs, err := framework.CRIClient(t, rt).ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)}})
		if err != nil || len(sbs) != 0 {
			t.Fatalf("refused pod has sandboxes after the restart: %v %v", sbs, err)
		}
		if p, _ := admin.CoreV1().Pods("default").Get(ctx, "sysctl-forbidden", metav1.GetOptions{}); p == nil || p.Status.Phase != v1.PodFailed {
			t.Fatalf("refused pod after restart: %+v", p)
		}
	})

	t.Run("RuntimeClass", func(t *testing.T) {
		rcs := admin.NodeV1().RuntimeClasses()
		for name, handler := range map[string]string{"runc-class": "runc", "bogus-class": "no-such-handler"} {
			if _, err := rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cluster.KubectlInput(withSpec("rc-runc", "  runtimeClassName: runc-class\n"), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.KubectlInput(withSpec("rc-bogus", "  runtimeClassName: bogus-class\n"), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		cpWaitPod(t, admin, "rc-runc", 60*time.Second, "Running with handler runc", cpRunningInAPI)
		out := cpWaitDescribeEvents(t, cluster, "rc-bogus", "FailedCreatePodSandBox")
		if !strings.Contains(out, "no-such-handler") {
			t.Errorf("the refusal does not name the handler:\n%s", out)
		}
		if p, _ := admin.CoreV1().Pods("default").Get(ctx, "rc-bogus", metav1.GetOptions{}); p == nil || p.Status.Phase != v1.PodPending {
			t.Errorf("rc-bogus not pending: %+v", p)
		}
	})
}
