package podsync

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime/plan"
)

// unhealthyProbes says container b's current instance failed liveness.
type unhealthyProbes struct{ id string }

func (u unhealthyProbes) Started(_, _ string) bool { return true }
func (u unhealthyProbes) Unhealthy(name, id string) string {
	if id == u.id {
		return "liveness"
	}
	return ""
}

func TestSyncPodRestartsAfterFailedLivenessProbe(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	g := int64(2)
	pod.Spec.Containers[1].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &g}
	h.sync(pod)
	h.calls()
	h.takeEvents()
	bID := h.rt.status(pod.UID).LatestContainer("b").ID
	h.s.opts.Probes = func(types.UID) plan.Probes { return unhealthyProbes{id: bID} }

	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("SyncPod = %+v", res)
	}
	_, rest := h.calls()
	wantCalls(t, "runtime calls", rest, []string{"StopContainer b", "CreateContainer b/1", "StartContainer b"})
	if grace := h.rt.stops[bID]; grace != 2*time.Second {
		t.Errorf("stopped with grace %v, want the probe's 2s", grace)
	}
	if ev := h.takeEvents(); !slices.Contains(ev, "Normal Killing Container b failed liveness probe, will be restarted") {
		t.Errorf("events %q: no Killing event with the probe's message", ev)
	}
	if h.s.InSync(pod, h.rt.status(pod.UID), "") != true {
		t.Error("the restarted instance is healthy: the pod must be in sync")
	}
}
