// Package mirror keeps the API server's mirror pods of this node's static
// pods: one per static pod, annotated kubernetes.io/config.mirror with the
// static pod's config hash and owned by the Node, so that the cluster sees
// what runs here. A mirror is never run; it is replaced when its static pod
// changes or when it is being deleted (a user deleted it), and deleted when
// its static pod is gone. It also redirects events about a static pod to its
// mirror (EventRecorder), so `kubectl describe` of the mirror shows them.
//
// The decisions (what to do about a static pod and its mirror, what the
// mirror looks like) are pure functions; Client carries them out.
package mirror

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/pod"
)

// Action is what a static pod's mirror needs.
type Action int

const (
	// None: the mirror is current.
	None Action = iota
	// Create: there is no mirror.
	Create
	// Replace: the mirror is outdated or being deleted; delete it, then
	// create a new one.
	Replace
)

func (a Action) String() string {
	return [...]string{"none", "create", "replace"}[a]
}

// Decide says what the mirror of static needs; mirror is the one known, or
// nil.
func Decide(static, mirror *v1.Pod) Action {
	switch {
	case mirror == nil:
		return Create
	case mirror.DeletionTimestamp != nil:
		// Deleted by a user (or the cluster): a static pod cannot be deleted
		// through the API, so its mirror comes back at once.
		return Replace
	case !IsMirrorOf(mirror, static):
		return Replace
	}
	return None
}

// IsMirrorOf reports whether mirror stands for the current version of
// static: its config.mirror annotation is the static pod's config hash.
func IsMirrorOf(mirror, static *v1.Pod) bool {
	hash, ok := static.Annotations[pod.ConfigHashAnnotationKey]
	if !ok {
		return false
	}
	m, ok := mirror.Annotations[pod.ConfigMirrorAnnotationKey]
	return ok && m == hash
}

// Build returns the mirror pod to create for static: its name, namespace,
// labels, annotations and spec, with config.mirror set to the config hash and
// a controller owner reference to the Node (NodeRestriction admits a node's
// mirror pods only with it). Server-side fields (UID, resource version,
// status, ...) are left out. The annotations are the static pod's, as
// upstream keeps them: config.source says file or http, config.seen when the
// node first saw the manifest. static is not modified.
func Build(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	annotations := maps.Clone(static.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[pod.ConfigMirrorAnnotationKey] = static.Annotations[pod.ConfigHashAnnotationKey]
	controller := true
	m := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       nodeName,
				UID:        nodeUID,
				Controller: &controller,
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	if m.Namespace == "" {
		m.Namespace = metav1.NamespaceDefault
	}
	m.Spec.NodeName = nodeName
	return m
}

// Ref is the event reference of a mirror pod.
func Ref(mirror *v1.Pod) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       mirror.Namespace,
		Name:            mirror.Name,
		UID:             mirror.UID,
		ResourceVersion: mirror.ResourceVersion,
	}
}
