package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
)

// harness runs a Controller on a fake clientset. The fake API server does
// not assign UIDs, so a reactor does, as the real one would.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	recorder *record.FakeRecorder
	ctrl     *Controller

	mu     sync.Mutex
	facts  Facts
	events []string
	uids   atomic.Int32
	// passes counts the status passes (each gathers the facts once).
	passes atomic.Int32
}

func newHarness(t *testing.T, cfg Config, objects ...runtime.Object) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(objects...), recorder: record.NewFakeRecorder(1000), facts: healthyFacts()}
	h.client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n := a.(k8stesting.CreateAction).GetObject().(*v1.Node)
		n.UID = types.UID(fmt.Sprintf("uid-%d", h.uids.Add(1)))
		return false, nil, nil
	})
	if cfg.NodeName == "" {
		cfg = testConfig()
	}
	cfg.StatusUpdateFrequency = 50 * time.Millisecond
	ctrl, err := NewController(cfg, Clients{Client: kubefake.Wrap(h.client)}, FactFunc(func(context.Context) Facts {
		h.passes.Add(1)
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.facts
	}), h.recorder)
	if err != nil {
		t.Fatal(err)
	}
	h.ctrl = ctrl
	return h
}

func (h *harness) setFacts(f func(*Facts)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.facts)
}

// run starts the controller; it is stopped (and waited for) at cleanup.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.ctrl.Run(ctx); close(done) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			h.t.Error("controller did not stop")
		}
	})
}

func (h *harness) node() *v1.Node {
	obj, err := h.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
	if err != nil {
		return nil
	}
	return obj.(*v1.Node)
}

func (h *harness) waitNode(what string, cond func(*v1.Node) bool) *v1.Node {
	h.t.Helper()
	var n *v1.Node
	poll.Eventually(h.t, what, func() bool { n = h.node(); return cond(n) })
	return n
}

// waitEvent waits for an event with reason and returns all seen so far.
func (h *harness) waitEvent(reason string) []string {
	h.t.Helper()
	h.waitEventCount(reason, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// waitEventCount waits until n events with reason were seen.
func (h *harness) waitEventCount(reason string, n int) {
	h.t.Helper()
	poll.Eventually(h.t, fmt.Sprintf("%d %s events", n, reason), func() bool { return h.countEvents(reason) >= n })
}

// waitPasses waits until the status loop made n more passes: whatever the
// loop does in a pass has been done by then.
func (h *harness) waitPasses(n int) {
	h.t.Helper()
	want := h.passes.Load() + int32(n)
	poll.Eventually(h.t, fmt.Sprintf("%d status passes", n), func() bool { return h.passes.Load() >= want })
}

func (h *harness) lease() *coordinationv1.Lease {
	obj, err := h.client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), LeaseNamespace, "n1")
	if err != nil {
		return nil
	}
	return obj.(*coordinationv1.Lease)
}

func (h *harness) countEvents(reason string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for {
		select {
		case e := <-h.recorder.Events:
			h.events = append(h.events, e)
			continue
		default:
		}
		break
	}
	for _, e := range h.events {
		if strings.Fields(e)[1] == reason {
			n++
		}
	}
	return n
}

func ready(n *v1.Node) bool { return n != nil && IsReady(n.Status) }

// The controller tests run in a synctest bubble: the status loop, its
// backoff, the informer and the lease loop all run on the bubble's fake
// clock, so periods and outages cost no wall-clock time and a check that
// something did not happen is exact.

func TestControllerRegistersAndGoesReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.Labels = map[string]string{"role": "edge"}
		h := newHarness(t, cfg)
		h.run()

		n := h.waitNode("Ready", ready)
		if n.Labels["role"] != "edge" || n.Labels[v1.LabelHostname] != "n1" || n.Labels[v1.LabelOSStable] != "linux" {
			t.Errorf("labels %v", n.Labels)
		}
		if pods := n.Status.Capacity[v1.ResourcePods]; pods.Value() != 110 {
			t.Errorf("pods capacity %s", pods.String())
		}
		if n.Status.NodeInfo.KubeletVersion != "v9.9.9" || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
			t.Errorf("status %+v", n.Status)
		}
		events := h.waitEvent(EventNodeReady)
		for _, want := range []string{"Normal Starting", "Normal RegisteredNode", "Normal NodeReady", "Normal NodeHasSufficientMemory"} {
			found := false
			for _, e := range events {
				found = found || strings.HasPrefix(e, want)
			}
			if !found {
				t.Errorf("no %q event in %v", want, events)
			}
		}

		// The Lease is created, owned by the Node, and renewed.
		poll.Eventually(t, "lease owned by the node", func() bool { l := h.lease(); return l != nil && len(l.OwnerReferences) == 1 })
		lease := h.lease()
		if lease.OwnerReferences[0].UID != n.UID || *lease.Spec.HolderIdentity != "n1" {
			t.Fatalf("lease %+v (node uid %s)", lease, n.UID)
		}
	})
}

func TestControllerReportsRuntimeTrouble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		h.setFacts(func(f *Facts) { f.RuntimeErrors = []string{"container runtime is down: connection refused"} })
		h.run()
		n := h.waitNode("registered NotReady", func(n *v1.Node) bool {
			return n != nil && condition(n.Status.Conditions, v1.NodeReady) != nil &&
				condition(n.Status.Conditions, v1.NodeReady).Status == v1.ConditionFalse
		})
		if msg := condition(n.Status.Conditions, v1.NodeReady).Message; !strings.Contains(msg, "connection refused") {
			t.Errorf("Ready message %q", msg)
		}
		h.waitEvent(EventNodeNotReady)

		// The runtime recovers: Ready at the next fast pass, announced once.
		start := time.Now()
		h.setFacts(func(f *Facts) { f.RuntimeErrors = nil; f.DiskPressure = true })
		n = h.waitNode("Ready", ready)
		if d := time.Since(start); d > fastPeriod+10*time.Millisecond { // the slack: a poll interval
			t.Errorf("Ready %s after the runtime recovered, want within the fast period %s", d, fastPeriod)
		}
		if c := condition(n.Status.Conditions, v1.NodeDiskPressure); c.Status != v1.ConditionTrue {
			t.Errorf("DiskPressure %+v", c)
		}
		h.waitEvent(EventNodeReady)
		h.waitEvent(EventNodeHasDiskPressure)
		h.waitPasses(2)
		if got := h.countEvents(EventNodeReady); got != 1 {
			t.Errorf("%d NodeReady events", got)
		}
	})
}

func TestControllerCatchesUpAfterOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		var down atomic.Bool
		down.Store(true)
		unavailable := func(k8stesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, apierrors.NewServiceUnavailable("etcd is down")
			}
			return false, nil, nil
		}
		for _, verb := range []string{"create", "get", "patch", "update"} {
			h.client.PrependReactor(verb, "*", unavailable)
		}
		start := time.Now()
		h.run()
		// The attempts come at least backoffInitial apart (the backoff is
		// capped at that with this short period), not at the 50 ms period.
		poll.Eventually(t, "3 register attempts", func() bool { return countActions(h.client, "create", "nodes") >= 3 })
		if d := time.Since(start); d < 2*backoffInitial {
			t.Errorf("3 register attempts in %s: want a retry with backoff", d)
		}
		if h.node() != nil {
			t.Fatal("registered while the API server was down")
		}
		down.Store(false)
		h.waitNode("Ready after the outage", ready)

		// A second outage after registration: status patches fail, then the
		// status catches up (a change made during the outage arrives).
		down.Store(true)
		patches := countActions(h.client, "patch", "nodes")
		h.setFacts(func(f *Facts) { f.DiskPressure = true })
		poll.Eventually(t, "2 failed status patches", func() bool { return countActions(h.client, "patch", "nodes") >= patches+2 })
		if c := condition(h.node().Status.Conditions, v1.NodeDiskPressure); c != nil && c.Status == v1.ConditionTrue {
			t.Fatal("status patched while the API server was down")
		}
		down.Store(false)
		h.waitNode("DiskPressure after the outage", func(n *v1.Node) bool {
			if n == nil {
				return false
			}
			c := condition(n.Status.Conditions, v1.NodeDiskPressure)
			return c != nil && c.Status == v1.ConditionTrue
		})
	})
}

func TestControllerRecreatesDeletedNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		h.run()
		first := h.waitNode("Ready", ready)
		h.waitEvent(EventRegisteredNode)
		// The fake API server drops events between the informer's list and
		// its watch: delete only once the watch is open and every goroutine
		// is idle.
		poll.Eventually(t, "node watch", func() bool { return countActions(h.client, "watch", "nodes") > 0 })
		synctest.Wait()

		if err := h.client.CoreV1().Nodes().Delete(context.Background(), "n1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		second := h.waitNode("re-created", func(n *v1.Node) bool { return ready(n) && n.UID != first.UID })
		if d := time.Since(start); d >= 50*time.Millisecond {
			t.Errorf("re-created after %s; the watch should bring it back before the next status pass", d)
		}
		if second.Labels[v1.LabelHostname] != "n1" {
			t.Errorf("labels %v", second.Labels)
		}
		h.waitEventCount(EventRegisteredNode, 2)
		// The Lease follows the new Node.
		poll.Eventually(t, "lease owner moved to the re-created Node", func() bool {
			l := h.lease()
			return l != nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == second.UID
		})
	})
}

func TestControllerAdoptsExistingNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		existing := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "pre", Labels: map[string]string{"kubernetes.io/arch": "wrong", "admin": "label"}},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
				{Type: "KernelDeadlock", Status: v1.ConditionFalse, Reason: "KernelHasNoDeadlock"},
				{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown"},
			}},
		}
		h := newHarness(t, Config{}, existing)
		h.run()
		n := h.waitNode("Ready", ready)
		if n.UID != "pre" {
			t.Errorf("node replaced: uid %s", n.UID)
		}
		if n.Labels["kubernetes.io/arch"] != "amd64" || n.Labels["admin"] != "label" || n.Labels[v1.LabelHostname] != "n1" {
			t.Errorf("labels %v", n.Labels)
		}
		if c := condition(n.Status.Conditions, "KernelDeadlock"); c == nil {
			t.Errorf("foreign condition lost: %v", n.Status.Conditions)
		}
		h.waitEvent(EventNodeReady)
		if got := h.countEvents(EventRegisteredNode); got != 0 {
			t.Errorf("%d RegisteredNode events for a node that was already there", got)
		}
	})
}

func TestControllerWithoutRegisterNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.RegisterNode = false
		h := newHarness(t, cfg)
		h.run()
		// Each pass looks the Node up and would create it then: after
		// three lookups, none did.
		poll.Eventually(t, "3 node lookups", func() bool { return countActions(h.client, "get", "nodes") >= 3 })
		if countActions(h.client, "create", "nodes") != 0 {
			t.Fatal("created the Node with RegisterNode off")
		}
		// An administrator creates it: nodelet reports on it.
		if _, err := h.client.CoreV1().Nodes().Create(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		n := h.waitNode("Ready", ready)
		if len(n.Labels) != 0 {
			t.Errorf("labels %v set without registration", n.Labels)
		}
	})
}

// TestControllerPatchesOnlyOnChange: with nothing changing, no patch goes
// out between report periods, however often the status is computed.
func TestControllerPatchesOnlyOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		h.run()
		h.waitNode("Ready", ready)
		h.waitPasses(1) // the pass that patched Ready is over
		before := countActions(h.client, "patch", "nodes")
		h.waitPasses(10)
		if after := countActions(h.client, "patch", "nodes"); after != before {
			t.Errorf("%d patches without a change", after-before)
		}
		h.setFacts(func(f *Facts) { f.RuntimeVersion = "containerd://2.0.0" })
		h.waitNode("new runtime version", func(n *v1.Node) bool {
			return n != nil && n.Status.NodeInfo.ContainerRuntimeVersion == "containerd://2.0.0"
		})
	})
}
