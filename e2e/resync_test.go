//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestIdleResyncs: the periodic resync of a running pod that did not change,
// and of a pod that ran to completion, does nothing (issue 23: an idle pod
// costs no periodic work beyond the relist); the finished pod is stopped
// once, not at every resync as before.
func TestIdleResyncs(t *testing.T) {
	rt := framework.StartRuntime(t)
	// A short resync period so that several pass; --v 6 logs every CRI call.
	n := framework.StartNodelet(t, rt, "--sync-frequency", "2s", "--v", "6")
	n.WriteManifest("idle.yaml", podManifest("idle", container("app", "sleep 3600")))
	done := podManifest("done", container("app", "exit 0"))
	done = strings.Replace(done, "spec:\n", "spec:\n  restartPolicy: Never\n", 1)
	n.WriteManifest("done.yaml", done)

	n.WaitPod("idle"+staticSuffix, 60*time.Second, "running", framework.Running)
	n.WaitPod("done"+staticSuffix, 60*time.Second, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })

	// Wait for the evidence: each pod's periodic resync skipped, twice.
	skipped := func(pod string) *regexp.Regexp {
		return regexp.MustCompile(`"Periodic resync of an unchanged pod; not syncing" pod="default/` + pod + staticSuffix + `"`)
	}
	for _, pod := range []string{"idle", "done"} {
		re := skipped(pod)
		poll.Within(t, 60*time.Second, "two skipped periodic resyncs of "+pod, func() (bool, string) {
			got := len(re.FindAllStringIndex(n.Log(), -1))
			return got >= 2, fmt.Sprintf("%d so far", got)
		})
	}
	log := n.Log()
	kills := regexp.MustCompile(`"Killing pod" pod="default/done`+staticSuffix+`"`).FindAllString(log, -1)
	stops := regexp.MustCompile(`"CRI call" method="StopPodSandbox"`).FindAllString(log, -1)
	if len(kills) != 1 || len(stops) != 1 {
		t.Errorf("the finished pod was stopped %d times (%d StopPodSandbox calls), want once", len(kills), len(stops))
	}
}
