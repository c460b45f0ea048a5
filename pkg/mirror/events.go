package mirror

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/pkg/pod"
)

// EventRecorder records events about a static pod so that `kubectl describe
// pod <mirror>` shows them. kubectl finds a mirror pod's events by the UID
// its kubernetes.io/config.mirror annotation names, not by the mirror's own
// UID (k8s.io/kubectl pkg/describe, PodDescriber): upstream, that annotation
// is the static pod's UID, which is what the upstream kubelet records events
// with. Here a static pod's UID and its config hash differ, and the mirror
// carries the hash; so events about a static pod are recorded on its mirror
// (same name and namespace) with the config hash as UID.
//
// That needs no mirror to exist yet: the first events of a new static pod
// (pulled, created, started), recorded before the API server has answered
// for its mirror, show on the mirror as soon as there is one, and so do the
// earlier events after a user deleted the mirror and it came back (same
// hash). After an edit, the new mirror shows the events since the edit.
//
// Events about any other object pass through unchanged.
type EventRecorder struct {
	inner record.EventRecorder
	pods  *pod.Manager
}

var _ record.EventRecorder = &EventRecorder{}

// NewEventRecorder wraps inner. pods is the node's pod manager; it resolves
// references to static pods by UID.
func NewEventRecorder(inner record.EventRecorder, pods *pod.Manager) *EventRecorder {
	return &EventRecorder{inner: inner, pods: pods}
}

// Event implements record.EventRecorder.
func (r *EventRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.inner.Event(r.target(object), eventtype, reason, message)
}

// Eventf implements record.EventRecorder.
func (r *EventRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.inner.Eventf(r.target(object), eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf implements record.EventRecorder.
func (r *EventRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.inner.AnnotatedEventf(r.target(object), annotations, eventtype, reason, messageFmt, args...)
}

// target is the object the event is recorded on.
func (r *EventRecorder) target(object runtime.Object) runtime.Object {
	switch o := object.(type) {
	case *v1.Pod:
		if o != nil {
			if ref := EventRef(o); ref != nil {
				return ref
			}
		}
	case *v1.ObjectReference:
		// A reference to a static pod (or one of its containers, FieldPath).
		if o == nil || o.Kind != "Pod" || r.pods == nil {
			return object
		}
		if static, ok := r.pods.PodByUID(o.UID); ok {
			if ref := EventRef(static); ref != nil {
				ref.FieldPath = o.FieldPath
				return ref
			}
		}
	}
	return object
}

// EventRef is the reference events about static are recorded with: its
// mirror's name and namespace, and the UID `kubectl describe` of the mirror
// selects events by (the config hash its config.mirror annotation carries).
// nil for a pod that is not static.
func EventRef(static *v1.Pod) *v1.ObjectReference {
	hash := static.Annotations[pod.ConfigHashAnnotationKey]
	if !pod.IsStatic(static) || hash == "" {
		return nil
	}
	return &v1.ObjectReference{
		Kind:       "Pod",
		APIVersion: "v1",
		Namespace:  static.Namespace,
		Name:       static.Name,
		UID:        types.UID(hash),
	}
}
