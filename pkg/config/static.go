package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodelet/nodelet/pkg/pod"
)

// Origin says where a static pod comes from. Both fields go into the pod's
// UID, so the same manifest in two files (or two URLs) gives two pods.
type Origin struct {
	// Source is pod.FileSource or pod.HTTPSource.
	Source string
	// Location is the manifest's absolute file path or its URL.
	Location string
}

// StaticPodName is the name a static pod runs under on a node: the manifest
// name suffixed with the node name, so mirror pods of the same manifest on
// different nodes do not collide in the API.
func StaticPodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// StaticPodUID derives a static pod's UID from where it comes from, the node
// and the pod's namespace and name: hex(sha256(...))[:32], the length of an
// md5-based upstream UID.
//
// Unlike upstream, the manifest's content is not part of the UID. An edit
// keeps the pod's identity, so the merger sees an UPDATE and only the
// containers whose spec changed are restarted, exactly as for an API pod;
// upstream turns every edit into a new pod and restarts all of it. The
// content goes into the config hash instead (StaticPodHash), which is what
// tells a mirror pod that it is outdated.
//
// A uid written in the manifest is not used as the pod's UID, unlike
// upstream: copied between files or nodes it would give two pods one UID,
// and the merger, the pod manager and the mirror pod all key on the UID.
func StaticPodUID(manifest *v1.Pod, o Origin, nodeName string) types.UID {
	ns := manifest.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	h := sha256.New()
	// NUL-separated so that no two tuples hash the same bytes.
	fmt.Fprintf(h, "nodelet static pod uid v2\x00%s\x00%s\x00%s\x00%s\x00%s", o.Source, o.Location, nodeName, ns, manifest.Name)
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16]))
}

// StaticPodHash is the static pod's config hash (kubernetes.io/config.hash
// and, later, the mirror pod's kubernetes.io/config.mirror): a hash of the
// origin, the node and the decoded manifest re-encoded as JSON, before
// defaults. Comments, key order, whitespace and YAML-vs-JSON do not change
// it, nor does a default added by a later nodelet version; any real change
// does.
func StaticPodHash(manifest *v1.Pod, o Origin, nodeName string) (string, error) {
	content, err := json.Marshal(manifest)
	if err != nil {
		return "", fmt.Errorf("encode pod %s for hashing: %w", manifest.Name, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "nodelet static pod v1\x00%s\x00%s\x00%s\x00", o.Source, o.Location, nodeName)
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// StaticPod turns a decoded manifest pod into the pod this node runs: API
// defaults, node-specific name, UID and node name, the config annotations,
// and the NoExecute toleration; then it is validated. The manifest is not
// modified. Errors carry field paths.
func StaticPod(manifest *v1.Pod, o Origin, nodeName string) (*v1.Pod, error) {
	if manifest.Name == "" {
		return nil, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")}.ToAggregate()
	}
	uid := StaticPodUID(manifest, o, nodeName)
	hash, err := StaticPodHash(manifest, o, nodeName)
	if err != nil {
		return nil, err
	}
	p := WithDefaults(manifest)
	p.Name = StaticPodName(p.Name, nodeName)
	p.UID = uid
	p.Spec.NodeName = nodeName
	// Server-side state has no meaning in a manifest. A deletionTimestamp in
	// particular would make the merger kill the pod as soon as it is added.
	p.ResourceVersion = ""
	p.ManagedFields = nil
	p.DeletionTimestamp = nil
	p.DeletionGracePeriodSeconds = nil
	p.Status = v1.PodStatus{Phase: v1.PodPending}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[pod.ConfigHashAnnotationKey] = hash
	p.Annotations[pod.ConfigSourceAnnotationKey] = o.Source
	// Static pods are not evicted for node conditions; the toleration tells
	// the taint manager the mirror pod must not be deleted either. Upstream
	// adds it to file pods only; URL pods are just as static, so they get it
	// too.
	addToleration(&p.Spec, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	if errs := ValidatePod(p); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return p, nil
}

// addToleration adds t, replacing an existing toleration for the same taint
// (key, operator, value, effect) so it is never listed twice.
func addToleration(s *v1.PodSpec, t v1.Toleration) {
	for i, old := range s.Tolerations {
		if old.Key == t.Key && old.Operator == t.Operator && old.Value == t.Value && old.Effect == t.Effect {
			s.Tolerations[i] = t
			return
		}
	}
	s.Tolerations = append(s.Tolerations, t)
}

// staticPods prepares every pod of one manifest. Pods of a list share the
// origin; their names differ, so their UIDs do too.
func staticPods(m *Manifest, o Origin, nodeName string) ([]*v1.Pod, error) {
	out := make([]*v1.Pod, 0, len(m.Pods))
	for i, mp := range m.Pods {
		p, err := StaticPod(mp, o, nodeName)
		if err != nil {
			if len(m.Pods) > 1 {
				return nil, fmt.Errorf("pod %d (%q): %w", i, mp.Name, err)
			}
			return nil, fmt.Errorf("pod %q: %w", mp.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// podVersions identifies a set of static pods with their content: "<uid>
// <config hash>" each, so an edit (same UID, new hash) is a change and a
// cosmetic rewrite of a manifest is not.
func podVersions(pods []*v1.Pod) sets.Set[string] {
	out := sets.New[string]()
	for _, p := range pods {
		out.Insert(string(p.UID) + " " + p.Annotations[pod.ConfigHashAnnotationKey])
	}
	return out
}
