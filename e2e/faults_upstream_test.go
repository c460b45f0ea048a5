//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
)

// The upstream kubelet on the fault suite's cases, for reference: what it
// does is written into docs/RELIABILITY.md beside what nodelet does. Off
// unless NODELET_FAULTS_UPSTREAM=1: it is a measurement of the reference,
// not a requirement on nodelet.

// TestFaultContainerdRestartUpstream is the reference for
// TestFaultContainerdRestartUpstream: the upstream kubelet, standalone with
// static pods, on the same runtime fault (containerd SIGTERMed, then
// SIGKILLed, and started again). Run with NODELET_FAULTS_UPSTREAM=1; what it
// did is in docs/RELIABILITY.md beside TestFaultContainerdRestartStandalone,
// nodelet on the same steps.
func TestFaultContainerdRestartUpstream(t *testing.T) {
	if os.Getenv("NODELET_FAULTS_UPSTREAM") != "1" {
		t.Skip("a reference run of the upstream kubelet: NODELET_FAULTS_UPSTREAM=1")
	}
	rt := framework.StartRuntime(t)
	k := framework.NewStandaloneUpstreamKubelet(t, rt)
	k.Start()
	containerdRestartStandalone(t, rt, k, "upstream")
}

// TestFaultContainerdRestartStandalone is nodelet on the steps of
// TestFaultContainerdRestartUpstream, so the two figures compare.
func TestFaultContainerdRestartStandalone(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)
	n.Start()
	containerdRestartStandalone(t, rt, n, "nodelet")
}

// containerdRestartStandalone runs static pods under the agent k, stops
// containerd (SIGTERM, then SIGKILL) for 10 s and starts it again; it
// checks what any kubelet must get right (no container restarted, serving
// throughout, a new pod afterwards) and logs what it saw.
func containerdRestartStandalone(t *testing.T, rt *framework.Runtime, k *framework.Nodelet, who string) {
	count := faultScale(8, 30)
	var names []string
	for i := range count {
		name := fmt.Sprintf("keep-%02d", i)
		k.WriteManifest(name+".yaml", netPodManifest(name, 5))
		names = append(names, name+staticSuffix)
	}
	before := waitAllRunning(t, k, names, 5*time.Minute)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := rt.StopContainerd(sig); err != nil {
			t.Fatal(err)
		}
		// What it says while the runtime is away, for the record.
		time.Sleep(10 * time.Second)
		code, body, err := healthz(k)
		t.Logf("%s, containerd %v for 10 s: healthz %d %.200q %v; alive %v", who, sig, code, body, err, k.Pid() != 0)
		if err := rt.RestartContainerd(); err != nil {
			t.Fatal(err)
		}
		// Both agents keep showing the pods running while the runtime
		// is away: what differs is whether anything was restarted.
		after := waitAllRunning(t, k, names, 3*time.Minute)
		for name, old := range before {
			for _, oc := range old.Status.ContainerStatuses {
				nc := framework.ContainerStatus(ptr.To(after[name]), oc.Name)
				if nc == nil || nc.ContainerID != oc.ContainerID || nc.RestartCount != oc.RestartCount {
					t.Errorf("%s, after containerd %v: %s/%s was %s (restarts %d), now %+v", who, sig, name, oc.Name, oc.ContainerID, oc.RestartCount, nc)
				}
			}
		}
	}
	if k.Pid() == 0 {
		t.Fatalf("%s exited with the runtime", who)
	}
	written := time.Now()
	k.WriteManifest("later.yaml", netPodManifest("later", 5))
	k.WaitPod("later"+staticSuffix, 2*time.Minute, "a new pod running after the restarts", framework.Running)
	t.Logf("MEASURE %s: after containerd's restarts, a new static pod's manifest written -> running on /pods: %s",
		who, time.Since(written).Round(time.Millisecond))
}

// healthz is the agent's /healthz on its healthz port (the upstream
// kubelet serves no /readyz there).
func healthz(n *framework.Nodelet) (int, string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HealthzPort))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
