package gc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// dead builds an exited container of pod uid named name, attempt a, created
// minutesAgo before t0, in sandbox sb.
func dead(id string, uid types.UID, name string, a uint32, minutesAgo int, sb string) Container {
	return Container{ID: id, PodUID: uid, Name: name, Attempt: a, SandboxID: sb,
		State: runtime.ContainerStateExited, CreatedAt: t0.Add(-time.Duration(minutesAgo) * time.Minute)}
}

func running(id string, uid types.UID, name string, a uint32, sb string) Container {
	c := dead(id, uid, name, a, 0, sb)
	c.State = runtime.ContainerStateRunning
	return c
}

func sandbox(id string, uid types.UID, a uint32, ready bool, minutesAgo int) Sandbox {
	st := runtime.SandboxStateNotReady
	if ready {
		st = runtime.SandboxStateReady
	}
	return Sandbox{ID: id, PodUID: uid, Attempt: a, State: st, CreatedAt: t0.Add(-time.Duration(minutesAgo) * time.Minute)}
}

func wantPods(uids ...types.UID) func(types.UID) bool {
	return func(uid types.UID) bool { return slices.Contains(uids, uid) }
}

func TestPlanContainerGC(t *testing.T) {
	def := DefaultPolicy()
	tests := []struct {
		name           string
		containers     []Container
		sandboxes      []Sandbox
		wanted         func(types.UID) bool
		policy         Policy
		wantContainers string // IDs in plan order
		wantSandboxes  string
	}{
		{
			name: "keep the last dead instance per container, never a running one",
			containers: []Container{
				running("run", "p1", "app", 3, "s1"),
				dead("a2", "p1", "app", 2, 3, "s1"),
				dead("a0", "p1", "app", 0, 9, "s1"),
				dead("a1", "p1", "app", 1, 6, "s1"),
				dead("side0", "p1", "sidecar", 0, 9, "s1"),
			},
			sandboxes:      []Sandbox{sandbox("s1", "p1", 0, true, 10)},
			wanted:         wantPods("p1"),
			policy:         def,
			wantContainers: "a0,a1",
		},
		{
			name: "attempt orders before creation time",
			containers: []Container{
				dead("late-low", "p1", "app", 1, 1, "s1"),
				dead("early-high", "p1", "app", 2, 5, "s1"),
			},
			wanted:         wantPods("p1"),
			policy:         def,
			wantContainers: "late-low",
		},
		{
			name: "created and unknown containers count as dead",
			containers: []Container{
				{ID: "c", PodUID: "p1", Name: "app", Attempt: 0, State: runtime.ContainerStateCreated, CreatedAt: t0.Add(-time.Hour)},
				{ID: "u", PodUID: "p1", Name: "app", Attempt: 1, State: runtime.ContainerStateUnknown, CreatedAt: t0.Add(-time.Minute)},
			},
			wanted:         wantPods("p1"),
			policy:         def,
			wantContainers: "c",
		},
		{
			name: "removed pod: every dead container and sandbox goes, running stays",
			containers: []Container{
				dead("g1", "gone", "app", 1, 2, "gs2"),
				dead("g0", "gone", "app", 0, 5, "gs1"),
				running("gr", "gone", "web", 0, "gs2"),
				dead("k0", "kept", "app", 0, 5, "ks"),
			},
			sandboxes: []Sandbox{
				sandbox("gs1", "gone", 0, false, 10),
				sandbox("gs2", "gone", 1, false, 4), // still holds the running one
				sandbox("ks", "kept", 0, false, 10),
			},
			wanted:         wantPods("kept"),
			policy:         def,
			wantContainers: "g0,g1",
			wantSandboxes:  "gs1",
		},
		{
			name: "nil podWanted wants every pod",
			containers: []Container{
				dead("g0", "gone", "app", 0, 5, "gs1"),
			},
			sandboxes:     []Sandbox{sandbox("gs1", "gone", 0, false, 10)},
			policy:        def,
			wantSandboxes: "",
		},
		{
			name: "min age: by finish time when known, else creation",
			containers: []Container{
				dead("new", "gone", "a", 2, 0, ""),
				func() Container {
					c := dead("fin-recent", "gone", "a", 1, 60, "")
					c.FinishedAt = t0.Add(-30 * time.Second)
					return c
				}(),
				func() Container {
					c := dead("fin-old", "gone", "a", 0, 60, "")
					c.FinishedAt = t0.Add(-time.Minute)
					return c
				}(),
				dead("created-old", "gone", "b", 0, 60, ""),
			},
			wanted:         wantPods(),
			policy:         Policy{MinAge: time.Minute, MaxPerPodContainer: 1, MaxContainers: -1},
			wantContainers: "created-old,fin-old",
		},
		{
			name: "max per pod container 0 removes all dead, -1 keeps all",
			containers: []Container{
				dead("a1", "p1", "app", 1, 1, ""),
				dead("a0", "p1", "app", 0, 2, ""),
			},
			wanted:         wantPods("p1"),
			policy:         Policy{MaxPerPodContainer: 0, MaxContainers: -1},
			wantContainers: "a0,a1",
		},
		{
			name: "max per pod container 0 with a cap",
			containers: []Container{
				dead("a1", "p1", "app", 1, 1, ""),
				dead("b0", "p1", "b", 0, 2, ""),
			},
			wanted:         wantPods("p1"),
			policy:         Policy{MaxPerPodContainer: 0, MaxContainers: 1},
			wantContainers: "b0,a1",
		},
		{
			name: "max per pod container -1 keeps all",
			containers: []Container{
				dead("a1", "p1", "app", 1, 1, ""),
				dead("a0", "p1", "app", 0, 2, ""),
			},
			wanted: wantPods("p1"),
			policy: Policy{MaxPerPodContainer: -1, MaxContainers: -1},
		},
		{
			name: "node-wide cap: older instances first, then oldest last instances",
			containers: []Container{
				// p1/app has 3 dead, p2/app 1, p3/app 1; cap 2 with no per-pod limit.
				dead("p1a2", "p1", "app", 2, 1, ""),
				dead("p1a1", "p1", "app", 1, 20, ""),
				dead("p1a0", "p1", "app", 0, 30, ""),
				dead("p2a0", "p2", "app", 0, 10, ""),
				dead("p3a0", "p3", "app", 0, 5, ""),
			},
			wanted: wantPods("p1", "p2", "p3"),
			policy: Policy{MaxPerPodContainer: -1, MaxContainers: 2},
			// 3 must go: p1a0, p1a1 (not the last of p1/app), then the oldest
			// last instance: p2a0 (10m; p3a0 5m, p1a2 1m).
			wantContainers: "p1a0,p1a1,p2a0",
		},
		{
			name: "node-wide cap removes only the excess",
			containers: []Container{
				dead("p1a2", "p1", "app", 2, 1, ""),
				dead("p1a1", "p1", "app", 1, 20, ""),
				dead("p1a0", "p1", "app", 0, 30, ""),
				dead("p2a0", "p2", "app", 0, 10, ""),
			},
			wanted:         wantPods("p1", "p2"),
			policy:         Policy{MaxPerPodContainer: -1, MaxContainers: 3},
			wantContainers: "p1a0",
		},
		{
			name: "cap 0 removes every dead container",
			containers: []Container{
				dead("x", "p1", "app", 0, 1, ""),
				dead("y", "p2", "app", 0, 2, ""),
				running("r", "p2", "web", 0, ""),
			},
			wanted:         wantPods("p1", "p2"),
			policy:         Policy{MaxPerPodContainer: 1, MaxContainers: 0},
			wantContainers: "y,x",
		},
		{
			name: "sandboxes of a wanted pod: newest stays, superseded empty ones go",
			containers: []Container{
				running("r", "p1", "app", 1, "s3"),
				dead("d", "p1", "app", 0, 8, "s2"), // kept: last dead instance
			},
			sandboxes: []Sandbox{
				sandbox("s1", "p1", 0, false, 20), // empty, superseded: goes
				sandbox("s2", "p1", 1, false, 10), // holds kept dead container
				sandbox("s3", "p1", 2, true, 5),
				sandbox("s0", "p1", 0, true, 30), // ready: never
			},
			wanted:        wantPods("p1"),
			policy:        def,
			wantSandboxes: "s1",
		},
		{
			name: "newest sandbox of a wanted pod stays even if not ready and empty",
			sandboxes: []Sandbox{
				sandbox("old", "p1", 0, false, 20),
				sandbox("new", "p1", 1, false, 10),
			},
			wanted:        wantPods("p1"),
			policy:        def,
			wantSandboxes: "old",
		},
		{
			name: "a sandbox emptied by this plan goes in the same plan",
			containers: []Container{
				dead("a1", "p1", "app", 1, 1, "s2"),
				dead("a0", "p1", "app", 0, 10, "s1"),
			},
			sandboxes: []Sandbox{
				sandbox("s1", "p1", 0, false, 20),
				sandbox("s2", "p1", 1, false, 5),
			},
			wanted:         wantPods("p1"),
			policy:         def,
			wantContainers: "a0",
			wantSandboxes:  "s1",
		},
		{
			name: "young dead container of a removed pod keeps its sandbox",
			containers: []Container{
				dead("young", "gone", "app", 0, 0, "s1"),
			},
			sandboxes: []Sandbox{
				sandbox("s1", "gone", 0, false, 20),
				sandbox("s0", "gone", 0, false, 30),
			},
			wanted:        wantPods(),
			policy:        Policy{MinAge: time.Minute, MaxPerPodContainer: 1, MaxContainers: -1},
			wantSandboxes: "s0",
		},
		{
			name:          "ready sandbox of a removed pod stays (the killer stops it first)",
			sandboxes:     []Sandbox{sandbox("s1", "gone", 0, true, 20)},
			wanted:        wantPods(),
			policy:        def,
			wantSandboxes: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := PlanContainerGC(tc.containers, tc.sandboxes, tc.wanted, tc.policy, t0)
			var cs, ss []string
			for _, c := range plan.Containers {
				cs = append(cs, c.ID)
			}
			for _, s := range plan.Sandboxes {
				ss = append(ss, s.ID)
			}
			if got := strings.Join(cs, ","); got != tc.wantContainers {
				t.Errorf("containers = %q, want %q", got, tc.wantContainers)
			}
			if got := strings.Join(ss, ","); got != tc.wantSandboxes {
				t.Errorf("sandboxes = %q, want %q", got, tc.wantSandboxes)
			}
			// Input order never matters.
			rc, rs := slices.Clone(tc.containers), slices.Clone(tc.sandboxes)
			slices.Reverse(rc)
			slices.Reverse(rs)
			again := PlanContainerGC(rc, rs, tc.wanted, tc.policy, t0)
			if !slices.Equal(again.Containers, plan.Containers) || !slices.Equal(again.Sandboxes, plan.Sandboxes) {
				t.Errorf("plan depends on input order")
			}
		})
	}
}

func TestPlanPodLogDirs(t *testing.T) {
	dirs := []string{"ns_web_u1", "ns_gone_u2", "ns_busy_u3", "junk", "a_b_c_d", "ns_x_"}
	got := PlanPodLogDirs(dirs, wantPods("u1"), func(uid types.UID) bool { return uid == "u3" })
	if strings.Join(got, ",") != "ns_gone_u2" {
		t.Errorf("got %v", got)
	}
	if got := PlanPodLogDirs(dirs, nil, func(types.UID) bool { return false }); got != nil {
		t.Errorf("nil podWanted removed %v", got)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Error(err)
	}
	if err := (Policy{MinAge: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "--minimum-container-ttl-duration") {
		t.Errorf("err = %v", err)
	}
}
