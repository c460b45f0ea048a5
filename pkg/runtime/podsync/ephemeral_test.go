package podsync

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSyncPodEphemeralContainer: an ephemeral container added to a running
// pod starts in its sandbox, in the target's process namespace, once; it
// is not started again after it exited, and a pod kill stops it.
func TestSyncPodEphemeralContainer(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	h.calls()
	target := h.rt.status(pod.UID).LatestContainer("a")

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent,
			Env: []v1.EnvVar{{Name: "X", Value: "1"}}},
		TargetContainerName: "a",
	}}
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	_, rest := h.calls()
	wantCalls(t, "ephemeral start", rest, []string{"CreateContainer dbg/0", "StartContainer dbg"})
	st := h.rt.status(pod.UID)
	dbg := st.LatestContainer("dbg")
	if dbg == nil || dbg.State != "running" || dbg.SandboxID != target.SandboxID {
		t.Fatalf("dbg: %+v, want running in sandbox %s", dbg, target.SandboxID)
	}
	cfg := h.rt.containers[dbg.ID].config
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != target.ID {
		t.Errorf("namespaces %v, want pid TARGET %s", ns, target.ID)
	}
	if !hasEnv(cfg, "X", "1") {
		t.Errorf("env %v lacks X=1", cfg.Envs)
	}
	if !h.s.InSync(pod, st, "") {
		t.Error("running ephemeral container: pod not in sync")
	}

	h.rt.exit("dbg", 1)
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if _, rest := h.calls(); len(rest) != 0 {
		t.Errorf("exited ephemeral container: calls %q, want none (never restarted)", rest)
	}

	h.rt.exit("a", 0)
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg2", Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent},
	})
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	_, rest = h.calls()
	wantCalls(t, "app restart with a new debugger", rest, []string{"CreateContainer dbg2/0", "StartContainer dbg2", "CreateContainer a/1", "StartContainer a"})

	st = h.rt.status(pod.UID)
	if err := h.s.KillPod(context.Background(), pod, st, nil); err != nil {
		t.Fatal(err)
	}
	if c := h.rt.status(pod.UID).LatestContainer("dbg2"); c.State != "exited" {
		t.Errorf("dbg2 after KillPod: %s, want exited", c.State)
	}
}

// TestSyncPodEphemeralTargetNotRunning: a target with no running instance
// fails the start with upstream's message; nothing is created.
func TestSyncPodEphemeralTargetNotRunning(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a", "b")
	pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	h.rt.exit("b", 0)
	h.calls()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox:1.35", ImagePullPolicy: v1.PullIfNotPresent},
		TargetContainerName:      "b",
	}}
	res := h.sync(pod)
	if !errors.Is(res.Err, ErrCreateContainerConfig) {
		t.Fatalf("err %v, want ErrCreateContainerConfig", res.Err)
	}
	w := res.Waiting["dbg"]
	if w.Reason != ReasonCreateContainerConfigError || w.Message != "unable to find target container b" {
		t.Errorf("waiting %+v", w)
	}
	if _, rest := h.calls(); len(rest) != 0 {
		t.Errorf("calls %q, want none", rest)
	}
}

func hasEnv(cfg *runtimeapi.ContainerConfig, k, v string) bool {
	for _, e := range cfg.Envs {
		if e.Key == k && string(e.Value) == v {
			return true
		}
	}
	return false
}
