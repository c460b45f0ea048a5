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

func onceManifest(name, extraSpec, containerExtra, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
%s  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", %q]
%s`, name, extraSpec, script, containerExtra)
}

func terminated(p *v1.Pod) *v1.ContainerStateTerminated {
	if c := framework.ContainerStatus(p, "app"); c != nil {
		return c.State.Terminated
	}
	return nil
}

// TestTerminationMessagesAndDeadline: the message file (default and custom
// path) and the FallbackToLogsOnError log tail reach the terminated state;
// activeDeadlineSeconds fails and stops the pod with DeadlineExceeded.
func TestTerminationMessagesAndDeadline(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)

	logs := "i=0; while [ $i -lt 100 ]; do echo line-$i; i=$((i+1)); done; "
	cases := []struct {
		name, containerExtra, script string
		want                         func(string) bool
	}{
		{"msg-default", "", "printf 'all done' > /dev/termination-log; exit 1",
			func(m string) bool { return m == "all done" }},
		{"msg-custom", "    terminationMessagePath: /tmp/why\n", "printf 'custom path' > /tmp/why; exit 0",
			func(m string) bool { return m == "custom path" }},
		{"msg-huge", "", "head -c 100000 /dev/zero | tr '\\0' x > /dev/termination-log; printf END >> /dev/termination-log; exit 1",
			func(m string) bool { return len(m) == 4096 && strings.HasSuffix(m, "END") }},
		{"msg-fallback", "    terminationMessagePolicy: FallbackToLogsOnError\n", logs + "exit 2",
			func(m string) bool {
				return strings.HasPrefix(m, "line-20\n") && strings.HasSuffix(m, "line-99\n") && strings.Count(m, "\n") == 80
			}},
		{"msg-fallback-ok", "    terminationMessagePolicy: FallbackToLogsOnError\n", logs + "exit 0",
			func(m string) bool { return m == "" }},
		{"msg-file-first", "    terminationMessagePolicy: FallbackToLogsOnError\n", logs + "printf mine > /dev/termination-log; exit 2",
			func(m string) bool { return m == "mine" }},
	}
	for _, c := range cases {
		n.WriteManifest(c.name+".yaml", onceManifest(c.name, "", c.containerExtra, c.script))
	}
	n.WriteManifest("deadline.yaml", onceManifest("deadline", "  activeDeadlineSeconds: 3\n", "", "sleep 3600"))
	// A pod on the pod network is ready to start containers once its
	// sandbox has an IP.
	n.WriteManifest("net.yaml", strings.Replace(onceManifest("net", "", "", "sleep 3600"), "hostNetwork: true", "hostNetwork: false", 1))
	np := n.WaitPod("net"+staticSuffix, 60*time.Second, "running", framework.Running)
	if !hasCondition(np, v1.PodReadyToStartContainers) || np.Status.PodIP == "" {
		t.Errorf("pod network pod: IP %q, conditions %+v", np.Status.PodIP, np.Status.Conditions)
	}

	for _, c := range cases {
		p := n.WaitPod(c.name+staticSuffix, 60*time.Second, "terminated", func(p *v1.Pod) bool { return terminated(p) != nil })
		if m := terminated(p).Message; !c.want(m) {
			t.Errorf("%s: message %q (%d bytes)", c.name, m, len(m))
		}
	}

	p := n.WaitPod("deadline"+staticSuffix, 60*time.Second, "failed", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("deadline pod: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	p = n.WaitPod("deadline"+staticSuffix, 30*time.Second, "container stopped", func(p *v1.Pod) bool { return terminated(p) != nil })
	if started := p.Status.StartTime; started == nil {
		t.Errorf("no start time")
	}
}
