package node

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NeedsStatusPatch reports whether desired must be sent although the API
// server has old: when anything but the heartbeats differs, or when the last
// report is reportEvery old (then the heartbeats are the news). Heartbeats
// alone do not count: the Lease is the liveness signal, and a patch of every
// node every 10 s is the load the Lease exists to avoid.
func NeedsStatusPatch(old, desired v1.NodeStatus, lastReport, now time.Time, reportEvery time.Duration) bool {
	if lastReport.IsZero() || now.Sub(lastReport) >= reportEvery {
		return true
	}
	return !equality.Semantic.DeepEqual(withoutHeartbeats(old), withoutHeartbeats(desired))
}

func withoutHeartbeats(st v1.NodeStatus) v1.NodeStatus {
	st = *st.DeepCopy()
	for i := range st.Conditions {
		st.Conditions[i].LastHeartbeatTime = metav1.Time{}
	}
	return st
}

// Event is a Kubernetes event to record on the Node.
type Event struct {
	Type, Reason, Message string
}

// Event reasons on the Node, as upstream (RegisteredNode is the node
// controller's there; with nodelet the node says it itself).
const (
	EventStarting                = "Starting"
	EventRegisteredNode          = "RegisteredNode"
	EventNodeReady               = "NodeReady"
	EventNodeNotReady            = "NodeNotReady"
	EventNodeHasSufficientMemory = "NodeHasSufficientMemory"
	EventNodeHasInsufficientMem  = "NodeHasInsufficientMemory"
	EventNodeHasNoDiskPressure   = "NodeHasNoDiskPressure"
	EventNodeHasDiskPressure     = "NodeHasDiskPressure"
	EventNodeHasSufficientPID    = "NodeHasSufficientPID"
	EventNodeHasInsufficientPID  = "NodeHasInsufficientPID"
)

// conditionEventReasons maps a condition type to the event reasons of its
// True and not-True states.
var conditionEventReasons = map[v1.NodeConditionType][2]string{
	v1.NodeReady:          {EventNodeReady, EventNodeNotReady},
	v1.NodeMemoryPressure: {EventNodeHasInsufficientMem, EventNodeHasSufficientMemory},
	v1.NodeDiskPressure:   {EventNodeHasDiskPressure, EventNodeHasNoDiskPressure},
	v1.NodePIDPressure:    {EventNodeHasInsufficientPID, EventNodeHasSufficientPID},
}

// ConditionEvents are the events announcing that nodelet's conditions
// changed status (or appeared) from old to new, in the order of new. They
// are Normal events, as upstream: NodeNotReady is news, not a fault of the
// event's object.
func ConditionEvents(nodeName string, old, new []v1.NodeCondition) []Event {
	var out []Event
	for _, c := range new {
		reasons, ok := conditionEventReasons[c.Type]
		if !ok {
			continue
		}
		if prev := condition(old, c.Type); prev != nil && prev.Status == c.Status {
			continue
		}
		reason := reasons[1]
		if c.Status == v1.ConditionTrue {
			reason = reasons[0]
		}
		out = append(out, Event{Type: v1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf("Node %s status is now: %s", nodeName, reason)})
	}
	return out
}
