package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
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
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if n := h.node(); cond(n) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting for %s; node: %+v", what, h.node())
	return nil
}

// waitEvent waits for an event with reason and returns all seen so far.
func (h *harness) waitEvent(reason string) []string {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		for _, e := range h.events {
			if strings.Fields(e)[1] == reason {
				out := append([]string(nil), h.events...)
				h.mu.Unlock()
				return out
			}
		}
		h.mu.Unlock()
		select {
		case e := <-h.recorder.Events:
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		case <-deadline:
			h.t.Fatalf("no %s event; got %v", reason, h.events)
		}
	}
}

// waitEventCount waits until n events with reason were seen.
func (h *harness) waitEventCount(reason string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.countEvents(reason) < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("fewer than %d %s events: %v", n, reason, h.events)
		}
		time.Sleep(10 * time.Millisecond)
	}
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

func TestControllerRegistersAndGoesReady(t *testing.T) {
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
	var lease *coordinationv1.Lease
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		obj, err := h.client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), LeaseNamespace, "n1")
		if err == nil {
			lease = obj.(*coordinationv1.Lease)
			if len(lease.OwnerReferences) == 1 {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if lease == nil || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != n.UID || *lease.Spec.HolderIdentity != "n1" {
		t.Fatalf("lease %+v (node uid %s)", lease, n.UID)
	}
}

func TestControllerReportsRuntimeTrouble(t *testing.T) {
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
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Ready %s after the runtime recovered", d)
	}
	if c := condition(n.Status.Conditions, v1.NodeDiskPressure); c.Status != v1.ConditionTrue {
		t.Errorf("DiskPressure %+v", c)
	}
	h.waitEvent(EventNodeReady)
	h.waitEvent(EventNodeHasDiskPressure)
	if got := h.countEvents(EventNodeReady); got != 1 {
		t.Errorf("%d NodeReady events", got)
	}
}

func TestControllerCatchesUpAfterOutage(t *testing.T) {
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
	h.run()
	time.Sleep(500 * time.Millisecond)
	if h.node() != nil {
		t.Fatal("registered while the API server was down")
	}
	creates := countActions(h.client, "create", "nodes")
	if creates < 2 || creates > 10 {
		t.Errorf("%d register attempts in 0.5 s: want a retry with backoff", creates)
	}
	down.Store(false)
	h.waitNode("Ready after the outage", ready)

	// A second outage after registration: status patches fail, then the
	// status catches up (a change made during the outage arrives).
	down.Store(true)
	h.setFacts(func(f *Facts) { f.DiskPressure = true })
	time.Sleep(300 * time.Millisecond)
	down.Store(false)
	h.waitNode("DiskPressure after the outage", func(n *v1.Node) bool {
		if n == nil {
			return false
		}
		c := condition(n.Status.Conditions, v1.NodeDiskPressure)
		return c != nil && c.Status == v1.ConditionTrue
	})
}

func TestControllerRecreatesDeletedNode(t *testing.T) {
	h := newHarness(t, Config{})
	h.run()
	first := h.waitNode("Ready", ready)
	h.waitEvent(EventRegisteredNode)
	// The fake API server drops events between the informer's list and its
	// watch: delete only once the watch is open.
	deadline := time.Now().Add(5 * time.Second)
	for countActions(h.client, "watch", "nodes") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)

	if err := h.client.CoreV1().Nodes().Delete(context.Background(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	second := h.waitNode("re-created", func(n *v1.Node) bool { return ready(n) && n.UID != first.UID })
	t.Logf("re-created in %s", time.Since(start))
	if time.Since(start) > 2*time.Second {
		t.Errorf("re-created after %s; the watch should bring it back at once", time.Since(start))
	}
	if second.Labels[v1.LabelHostname] != "n1" {
		t.Errorf("labels %v", second.Labels)
	}
	h.waitEventCount(EventRegisteredNode, 2)
	// The Lease follows the new Node.
	deadline = time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		obj, err := h.client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), LeaseNamespace, "n1")
		if err == nil && len(obj.(*coordinationv1.Lease).OwnerReferences) == 1 && obj.(*coordinationv1.Lease).OwnerReferences[0].UID == second.UID {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Error("lease owner not moved to the re-created Node")
}

func TestControllerAdoptsExistingNode(t *testing.T) {
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
}

func TestControllerWithoutRegisterNode(t *testing.T) {
	cfg := testConfig()
	cfg.RegisterNode = false
	h := newHarness(t, cfg)
	h.run()
	time.Sleep(300 * time.Millisecond)
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
}

// TestControllerPatchesOnlyOnChange: with nothing changing, no patch goes
// out between report periods, however often the status is computed.
func TestControllerPatchesOnlyOnChange(t *testing.T) {
	h := newHarness(t, Config{})
	h.run()
	h.waitNode("Ready", ready)
	time.Sleep(100 * time.Millisecond) // let the first patch land
	before := countActions(h.client, "patch", "nodes")
	time.Sleep(500 * time.Millisecond) // ~10 passes at 50 ms
	if after := countActions(h.client, "patch", "nodes"); after != before {
		t.Errorf("%d patches without a change", after-before)
	}
	h.setFacts(func(f *Facts) { f.RuntimeVersion = "containerd://2.0.0" })
	h.waitNode("new runtime version", func(n *v1.Node) bool {
		return n != nil && n.Status.NodeInfo.ContainerRuntimeVersion == "containerd://2.0.0"
	})
}
