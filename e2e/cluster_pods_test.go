//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// TestClusterPods runs nodelet as a cluster member with the node's own
// credentials (Node authorizer + NodeRestriction) and checks the pod half of
// it: API pods run and report status, deletion is graceful and removes the
// object, static pods have mirror pods (re-created when deleted, their
// events on them, deleted when orphaned), and an API server outage or a
// nodelet restart is caught up with. The steps share one cluster, runtime
// and nodelet and build on each other. Timings are logged ("measured:"),
// never asserted.
func TestClusterPods(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	node := cpWaitNode(t, admin)
	cri := framework.CRIClient(t, rt)
	ctx := context.Background()
	pods := admin.CoreV1().Pods("default")

	t.Run("APIPodRunsAndReportsStatus", func(t *testing.T) {
		if _, err := cluster.KubectlInput(cpPodYAML("api-web", "sleep 3600", 30), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		p := cpWaitPod(t, admin, "api-web", 60*time.Second, "Running with a pod IP", cpRunningInAPI)
		cs := p.Status.ContainerStatuses[0]
		if !strings.HasPrefix(cs.ContainerID, "containerd://") || p.Status.HostIP == "" || p.Status.StartTime == nil {
			t.Errorf("status incomplete: %+v", p.Status)
		}
		t.Logf("api-web: phase %s, pod IP %s, host IP %s, container %s", p.Status.Phase, p.Status.PodIP, p.Status.HostIP, cs.ContainerID)

		var took []time.Duration
		for i := 0; i < 7; i++ {
			took = append(took, cpTimeToRunning(t, admin, fmt.Sprintf("latency-%d", i)))
		}
		t.Logf("measured: API pod created -> Running in the API: p50 %s (each: %v)", cpP50(took), took)
		for i := range took {
			_ = pods.Delete(ctx, fmt.Sprintf("latency-%d", i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
		}
	})

	t.Run("GracefulDeleteRemovesObject", func(t *testing.T) {
		script := "trap 'sleep 3; exit 0' TERM; while true; do sleep 0.1; done"
		if _, err := cluster.KubectlInput(cpPodYAML("trapper", script, 30), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		p := cpWaitPod(t, admin, "trapper", 60*time.Second, "Running", cpRunningInAPI)
		begin := time.Now()
		// kubectl delete waits for the object to be gone.
		if _, err := cluster.Kubectl("delete", "pod", "trapper", "--timeout=90s"); err != nil {
			t.Fatal(err)
		}
		gone := time.Since(begin)
		if _, err := pods.Get(ctx, "trapper", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("trapper still in the API: %v", err)
		}
		s := waitRuntime(t, cri, p.UID, p.Name, 30*time.Second, "container exited", func(s *runtime.PodStatus) bool {
			c := s.LatestContainer("app")
			return c != nil && c.State == runtime.ContainerStateExited
		})
		c := s.LatestContainer("app")
		stopped := c.FinishedAt.Sub(begin)
		t.Logf("measured: kubectl delete of a pod needing 3 s to stop -> object gone: %s (container exited %d after %s)",
			gone.Round(time.Millisecond), c.ExitCode, stopped.Round(10*time.Millisecond))
		if c.ExitCode != 0 || stopped < 3*time.Second {
			t.Errorf("not stopped gracefully: exit %d after %s", c.ExitCode, stopped)
		}
	})

	mirrorName := "web" + staticSuffix
	var mirror *v1.Pod
	t.Run("StaticPodHasMirror", func(t *testing.T) {
		n.WriteManifest("web.yaml", podManifest("web", container("app", "sleep 3600")))
		mirror = cpWaitPod(t, admin, mirrorName, 60*time.Second, "mirror pod Running", cpRunningInAPI)
		hash := mirror.Annotations[pod.ConfigHashAnnotationKey]
		if hash == "" || mirror.Annotations[pod.ConfigMirrorAnnotationKey] != hash {
			t.Errorf("mirror annotations %v", mirror.Annotations)
		}
		if src := mirror.Annotations[pod.ConfigSourceAnnotationKey]; src != pod.FileSource {
			t.Errorf("mirror config.source = %q, want %q", src, pod.FileSource)
		}
		if o := mirror.OwnerReferences; len(o) != 1 || o[0].Kind != "Node" || o[0].Name != framework.NodeName || o[0].UID != node.UID {
			t.Errorf("mirror owner references %+v, want the Node %s", o, node.UID)
		}
	})
	if mirror == nil {
		t.Fatal("no mirror pod: the remaining steps need it")
	}

	t.Run("EventsOnMirror", func(t *testing.T) {
		out := cpWaitDescribeEvents(t, cluster, mirrorName, "Pulled", "Created", "Started")
		// kubectl selects a mirror's events by the UID its config.mirror
		// annotation names: that is what they are recorded with.
		events, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", mirror.Annotations[pod.ConfigMirrorAnnotationKey]).String()})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, e := range events.Items {
			reasons = append(reasons, e.Reason)
		}
		t.Logf("events of mirror %s: %v\n%s", mirrorName, reasons, lastLines(out, 6))
	})

	t.Run("DeletedMirrorRecreatedContainersUntouched", func(t *testing.T) {
		before := mirror.Status.ContainerStatuses[0]
		begin := time.Now()
		if err := pods.Delete(ctx, mirrorName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		back := cpWaitPod(t, admin, mirrorName, 30*time.Second, "a new mirror", func(p *v1.Pod) bool {
			return p != nil && p.UID != mirror.UID && p.DeletionTimestamp == nil
		})
		took := time.Since(begin)
		back = cpWaitPod(t, admin, mirrorName, 30*time.Second, "status on the new mirror", cpRunningInAPI)
		after := back.Status.ContainerStatuses[0]
		t.Logf("measured: mirror deleted -> back: %s (new UID %s, status on it after %s)", took.Round(time.Millisecond), back.UID, time.Since(begin).Round(time.Millisecond))
		if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
			t.Errorf("static pod's container touched: %s (restarts %d) -> %s (restarts %d)",
				before.ContainerID, before.RestartCount, after.ContainerID, after.RestartCount)
		}
		// The events recorded before are still shown: the new mirror names
		// the same static pod version.
		cpWaitDescribeEvents(t, cluster, mirrorName, "Pulled", "Created", "Started")
		mirror = back
	})

	t.Run("APIServerOutage", func(t *testing.T) {
		// A pod whose container ends during the outage: its final status is
		// caught up with afterwards.
		if _, err := cluster.KubectlInput(cpPodYAML("finisher", "sleep 20", 1), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		cpWaitPod(t, admin, "finisher", 60*time.Second, "Running", cpRunningInAPI)
		webID := mirror.Status.ContainerStatuses[0].ContainerID

		cluster.StopAPIServer(t)
		down := time.Now()
		// During the outage, a new static pod starts, and nodelet restarts
		// without an API server to talk to.
		n.WriteManifest("late.yaml", podManifest("late", container("app", "sleep 3600")))
		n.WaitPod("late"+staticSuffix, 60*time.Second, "running during the outage", framework.Running)
		n.Stop()
		n.Start()
		for time.Since(down) < 60*time.Second {
			p, err := n.Pod(mirrorName)
			if err == nil && p != nil && len(p.Status.ContainerStatuses) > 0 {
				if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != webID || cs.State.Running == nil {
					t.Fatalf("static pod disturbed during the outage: %+v", cs)
				}
			}
			time.Sleep(time.Second)
		}
		if p := n.WaitPod(mirrorName, 10*time.Second, "running", framework.Running); p.Status.ContainerStatuses[0].ContainerID != webID {
			t.Fatalf("static pod restarted during the outage")
		}
		up := cluster.StartAPIServer(t)
		cpWaitPod(t, admin, "late"+staticSuffix, 60*time.Second, "mirror of the pod started during the outage Running", cpRunningInAPI)
		late := time.Since(up)
		f := cpWaitPod(t, admin, "finisher", 60*time.Second, "Succeeded", func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodSucceeded
		})
		finished := time.Since(up)
		t.Logf("measured: API server restarted (process start) -> new static pod's mirror Running in the API %s, pod finished during the outage Succeeded %s",
			late.Round(time.Millisecond), finished.Round(time.Millisecond))
		if cs := f.Status.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			t.Errorf("finisher status: %+v", cs.State)
		}
		w := cpWaitPod(t, admin, mirrorName, 30*time.Second, "mirror Running", cpRunningInAPI)
		if cs := w.Status.ContainerStatuses[0]; cs.ContainerID != webID || cs.RestartCount != 0 {
			t.Errorf("static pod's container after the outage: %s restarts %d, want %s", cs.ContainerID, cs.RestartCount, webID)
		}
	})

	t.Run("NodeletRestartCatchesUp", func(t *testing.T) {
		lateMirror := cpWaitPod(t, admin, "late"+staticSuffix, 30*time.Second, "mirror", func(p *v1.Pod) bool { return p != nil })
		n.Stop()
		// While nodelet is down: a pod is bound to the node, and a static
		// pod's manifest goes away.
		if _, err := cluster.KubectlInput(cpPodYAML("while-down", "sleep 3600", 30), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		n.RemoveManifest("late.yaml")
		begin := time.Now()
		n.Start()
		cpWaitPod(t, admin, "while-down", 60*time.Second, "Running", cpRunningInAPI)
		running := time.Since(begin)
		cpWaitPod(t, admin, lateMirror.Name, 60*time.Second, "orphaned mirror deleted", func(p *v1.Pod) bool {
			return p == nil || p.UID != lateMirror.UID
		})
		t.Logf("measured: nodelet restarted -> pod bound while down Running in the API %s, orphaned mirror deleted %s",
			running.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	})

	t.Run("OrphanedMirrorDeleted", func(t *testing.T) {
		begin := time.Now()
		n.RemoveManifest("web.yaml")
		cpWaitPod(t, admin, mirrorName, 60*time.Second, "mirror deleted", func(p *v1.Pod) bool { return p == nil })
		t.Logf("measured: manifest removed -> mirror gone: %s", time.Since(begin).Round(time.Millisecond))
	})

	if t.Failed() {
		cpDumpAPIPods(t, admin)
		if b, err := os.ReadFile(filepath.Join(cluster.StateDir, "logs", "kube-apiserver.log")); err == nil {
			t.Logf("kube-apiserver log (last 20 lines):\n%s", lastLines(string(b), 20))
		}
	}
}

// cpClient is a client without client-side throttling worth the name: the
// default 5 QPS would make polling every 25 ms wait 200 ms per request and
// blur the measured figures.
func cpClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg := restConfig(t, kubeconfig)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cpWaitNode waits for nodelet to register the Node: mirror pods need it as
// their owner.
func cpWaitNode(t *testing.T, admin kubernetes.Interface) *v1.Node {
	t.Helper()
	var n *v1.Node
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "node "+framework.NodeName+" registered", func() (bool, string) {
		var err error
		n, err = admin.CoreV1().Nodes().Get(context.Background(), framework.NodeName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("node %s: %v", framework.NodeName, err)
		}
		return err == nil, fmt.Sprint(err)
	})
	return n
}

// cpWaitDescribeEvents waits until `kubectl describe pod name` lists events
// with every one of reasons, and returns its output.
func cpWaitDescribeEvents(t *testing.T, c *framework.Cluster, name string, reasons ...string) string {
	t.Helper()
	var out string
	poll.Until(t, 30*time.Second, 500*time.Millisecond, fmt.Sprintf("kubectl describe pod %s to list %v events", name, reasons), func() (bool, string) {
		var err error
		out, err = c.Kubectl("describe", "pod", name)
		events := ""
		if i := strings.Index(out, "\nEvents:"); i >= 0 {
			events = out[i:]
		}
		missing := slices.DeleteFunc(slices.Clone(reasons), func(r string) bool { return strings.Contains(events, r) })
		return err == nil && len(missing) == 0, fmt.Sprintf("no %v events (err %v):\n%s", missing, err, out)
	})
	return out
}

// cpPodYAML is an API pod bound to the e2e node, on the pod network, with
// no service account token (nothing to project).
func cpPodYAML(name, script string, grace int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  restartPolicy: Never
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", %q]
`, name, framework.NodeName, grace, script)
}

// cpRunningInAPI: the API shows the pod Running, every container running,
// with a pod IP.
func cpRunningInAPI(p *v1.Pod) bool {
	return p != nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && framework.Running(p)
}

// cpWaitPod polls the API until cond holds for the pod (nil when absent).
func cpWaitPod(t *testing.T, c kubernetes.Interface, name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	poll.Until(t, timeout, 25*time.Millisecond, "pod "+name+": "+what, func() (bool, string) {
		p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			p, err = nil, nil
		}
		last = p
		if err == nil && cond(p) {
			return true, ""
		}
		var st any = "absent"
		if p != nil {
			st = p.Status
		}
		return false, fmt.Sprintf("error %v, status %+v", err, st)
	})
	return last
}

// cpTimeToRunning creates a pod through the API and times it until the API
// shows it Running, from the watch (no polling delay in the figure).
func cpTimeToRunning(t *testing.T, c kubernetes.Interface, name string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pods := c.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName: framework.NodeName, AutomountServiceAccountToken: ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []v1.Container{{Name: "app", Image: "busybox:1.35", Command: []string{"sleep", "3600"}}},
		},
	}
	begin := time.Now()
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*v1.Pod); ok && cpRunningInAPI(p) {
			return time.Since(begin)
		}
	}
	t.Fatalf("pod %s: not Running in the API within a minute", name)
	return 0
}

func cpP50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func cpDumpAPIPods(t *testing.T, c kubernetes.Interface) {
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("list pods: %v", err)
		return
	}
	for _, p := range list.Items {
		t.Logf("API pod %s uid %s phase %s deleting %v annotations %v", p.Name, p.UID, p.Status.Phase, p.DeletionTimestamp != nil, p.Annotations)
	}
}
