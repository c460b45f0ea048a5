// Package pod owns pod identity on this node: the annotations nodelet stamps on
// every pod it runs (source, first-seen time, config hash, mirror marker), the
// full-name helpers, and the Manager that indexes the desired pods and their
// mirror pods by UID and by full name.
package pod

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Annotation keys, the same strings the upstream kubelet uses so that tools
// which read them (kubectl describe, controllers) keep working.
const (
	ConfigSourceAnnotationKey    = "kubernetes.io/config.source"
	ConfigMirrorAnnotationKey    = "kubernetes.io/config.mirror"
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	ConfigHashAnnotationKey      = "kubernetes.io/config.hash"
)

// Source names carried in the config.source annotation.
const (
	FileSource      = "file"
	HTTPSource      = "http"
	ApiserverSource = "api"
	// AllSource identifies updates that concern every source (SET snapshots).
	AllSource = "*"
)

// FullName is the node-unique key of a pod: "<name>_<namespace>".
func FullName(p *v1.Pod) string { return BuildFullName(p.Name, p.Namespace) }

// BuildFullName builds the key FullName returns from its parts.
func BuildFullName(name, namespace string) string { return name + "_" + namespace }

// Source returns the config source of the pod, or an error when the
// annotation is missing, which means the pod did not come through the merger.
func Source(p *v1.Pod) (string, error) {
	if s, ok := p.Annotations[ConfigSourceAnnotationKey]; ok {
		return s, nil
	}
	return "", fmt.Errorf("pod %s has no %s annotation", FullName(p), ConfigSourceAnnotationKey)
}

// IsStatic reports whether the pod comes from a source other than the API
// server (manifest file or URL): nodelet owns it and mirrors it to the API.
func IsStatic(p *v1.Pod) bool {
	s, err := Source(p)
	return err == nil && s != ApiserverSource
}

// IsMirror reports whether the pod is an API object that mirrors a static pod.
func IsMirror(p *v1.Pod) bool {
	_, ok := p.Annotations[ConfigMirrorAnnotationKey]
	return ok
}
