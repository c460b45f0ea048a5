package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/admission"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/security"
	"github.com/nodelet/nodelet/pkg/status"
)

// AdmitFunc decides whether a pod may run on this node beside active, the
// pods admitted before it that have not finished; nil admits it.
type AdmitFunc func(pod *v1.Pod, active []*v1.Pod) *security.Rejection

// admitted reports whether p may run. Pods are checked when they arrive
// (created); a refused pod stays refused until it leaves the node, however
// it is updated, so it can never start later by the back door. Only the
// sync loop goroutine calls it.
func (a *Agent) admitted(p *v1.Pod, created bool) bool {
	if a.rejected.Has(p.UID) {
		return false
	}
	if created && finishedBefore(p) {
		// Refused or finished before (by this node before a restart): it
		// stays so, whatever the settings are now and whatever is left of
		// it in the runtime, as upstream never runs a pod whose phase is
		// terminal. Its status stays what the API shows.
		a.rejected.Insert(p.UID)
		a.statuses.Set(p.UID, p.Status)
		a.stopRefused(p.UID)
		return false
	}
	// A pod the API shows finished is never re-judged: refusing it now
	// would turn Succeeded into Failed.
	if a.admit == nil || !created || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return true
	}
	active := a.activePods(p.UID)
	r := a.admit(p, active)
	if r != nil && a.preempt != nil && pod.IsCritical(p) && admission.IsResourceReason(r.Reason) {
		r = a.preemptFor(p, active, r)
	}
	if r == nil {
		return true
	}
	a.reject(p, r)
	return false
}

// activePods are the pods admitted and not finished, but except: what a
// new pod's requests, host ports and the pod count are judged against.
// Pods being deleted still count until they are gone, as upstream.
func (a *Agent) activePods(except types.UID) []*v1.Pod {
	var out []*v1.Pod
	for _, o := range a.pods.Pods() {
		if o.UID == except || a.rejected.Has(o.UID) {
			continue
		}
		// Stopping for a node shutdown or preempted: going, not counted.
		if a.shutdowns.get(o.UID) != nil {
			continue
		}
		if st, ok := a.statuses.Get(o.UID); ok && (st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// finishedBefore reports whether a pod arrives already terminal: refused
// at admission, or an API pod whose phase is Succeeded or Failed. Only the
// API's status is an account of what ran; a manifest's status is its
// author's words and is ignored.
func finishedBefore(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
		return false
	}
	if p.Status.Phase == v1.PodFailed && (security.IsAdmissionReason(p.Status.Reason) || admission.IsReason(p.Status.Reason)) {
		return true
	}
	src, err := pod.Source(p)
	return err == nil && src == pod.ApiserverSource
}

func (a *Agent) reject(p *v1.Pod, r *security.Rejection) {
	klog.InfoS("Pod refused at admission", "pod", klog.KObj(p), "uid", p.UID, "reason", r.Reason, "message", r.Message)
	a.rejected.Insert(p.UID)
	if a.recorder != nil {
		a.recorder.Eventf(p, v1.EventTypeWarning, r.Reason, "%s", r.Message)
	}
	st := v1.PodStatus{
		Phase:    v1.PodFailed,
		Reason:   r.Reason,
		Message:  "Pod was rejected: " + r.Message,
		QOSClass: status.QOSClass(p),
	}
	a.statuses.Set(p.UID, st)
	if a.cluster != nil {
		a.cluster.SetPodStatus(p, st)
	}
	a.stopRefused(p.UID)
}

// stopRefused stops what runs of a refused pod: containers started before
// a restart of nodelet with other settings. It runs at the refusal and
// whenever the relister reports the pod (its first listing may come after
// the refusal).
func (a *Agent) stopRefused(uid types.UID) {
	for _, rp := range a.relister.Snapshot() {
		if rp.UID == uid && isRunning(rp) && a.killer != nil {
			a.killer.Kill(rp)
		}
	}
}

// forgetRejected drops a refused pod that left the node.
func (a *Agent) forgetRejected(uid types.UID) bool {
	if !a.rejected.Has(uid) {
		return false
	}
	a.rejected.Delete(uid)
	return true
}
