package podsync

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestKillPodStopsSidecarsLastInReverse: app containers stop first, then
// the sidecars one at a time in reverse order, each with what is left of
// its grace period (at least 2 s).
func TestKillPodStopsSidecarsLastInReverse(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	always := v1.ContainerRestartPolicyAlways
	for _, n := range []string{"side1", "side2"} {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers,
			v1.Container{Name: n, Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent, RestartPolicy: &always})
	}
	for range 3 { // side1, side2, then the apps
		if res := h.sync(pod); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	st := h.rt.status("uid-1")
	for _, n := range []string{"a", "b", "side1", "side2"} {
		if c := st.LatestContainer(n); c == nil || c.State != "running" {
			t.Fatalf("%s not running: %+v", n, c)
		}
	}
	h.calls()
	// Each app stop takes 3 s of the pod's 7 s.
	h.rt.onStop = func(id string, _ time.Duration) {
		if c := st.LatestContainer("a"); c.ID == id {
			h.clock.Step(3 * time.Second)
		}
	}
	if err := h.s.KillPod(context.Background(), pod, st, nil); err != nil {
		t.Fatal(err)
	}
	_, rest := h.calls()
	stops := rest[:4]
	if !(stops[2] == "StopContainer side2" && stops[3] == "StopContainer side1") {
		t.Errorf("stop order %q: want the apps, then side2, then side1", stops)
	}
	if g := h.rt.stops[st.LatestContainer("side2").ID]; g != 4*time.Second {
		t.Errorf("side2 stopped with %s, want the 4 s left", g)
	}
}
