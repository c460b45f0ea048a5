package volumes

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// downwardFields are the fieldRef paths a downward API volume may name (the
// API validates the same set): metadata only; spec and status fields are
// for environment variables.
var downwardFields = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"metadata.labels", "metadata.annotations",
}

// checkDownwardItem fails for an item this package cannot fill for p.
func checkDownwardItem(p *v1.Pod, item *v1.DownwardAPIVolumeFile) error {
	switch {
	case item.FieldRef != nil:
		if _, _, ok := splitFieldPath(item.FieldRef.FieldPath); !ok {
			return fmt.Errorf("downwardAPI %q: fieldRef %q %w", item.Path, item.FieldRef.FieldPath, criconfig.ErrUnsupported)
		}
	case item.ResourceFieldRef != nil:
		// The node's allocatable amounts only change the value, not
		// whether there is one.
		if _, err := criconfig.ResourceFieldValue(p, nil, item.ResourceFieldRef, nil); err != nil {
			return fmt.Errorf("downwardAPI %q: %w", item.Path, err)
		}
	default:
		return fmt.Errorf("downwardAPI %q: neither fieldRef nor resourceFieldRef", item.Path)
	}
	return nil
}

// splitFieldPath splits "metadata.labels['app']" into the field and the
// key; ok is false for paths a downward API volume cannot name.
func splitFieldPath(path string) (field, key string, ok bool) {
	field = path
	if i := strings.Index(path, "['"); i >= 0 && strings.HasSuffix(path, "']") {
		field, key = path[:i], path[i+2:len(path)-2]
		if key == "" || (field != "metadata.labels" && field != "metadata.annotations") {
			return "", "", false
		}
	}
	for _, f := range downwardFields {
		if f == field {
			return field, key, true
		}
	}
	return "", "", false
}

// fieldValue returns the content of a downward API file for the pod.
func fieldValue(pod *v1.Pod, path string) (string, error) {
	field, key, ok := splitFieldPath(path)
	if !ok {
		return "", fmt.Errorf("fieldRef %q %w", path, criconfig.ErrUnsupported)
	}
	if key == "" {
		// A whole map is a file's worth; one value reads as in an env var.
		switch field {
		case "metadata.labels":
			return formatMap(pod.Labels), nil
		case "metadata.annotations":
			return formatMap(pod.Annotations), nil
		}
	}
	v, _ := criconfig.PodMetadataField(pod, path)
	return v, nil
}

// formatMap renders labels or annotations the way the API documents the
// downward API files: one key="quoted value" per line, sorted by key, so
// the content is stable and a value may hold any character.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// hasDownwardAPI reports whether a volume of p has downward API items.
func hasDownwardAPI(p *v1.Pod) bool {
	for i := range p.Spec.Volumes {
		src, ok := asProjection(&p.Spec.Volumes[i])
		if !ok {
			continue
		}
		for _, s := range src.Sources {
			if s.DownwardAPI != nil && len(s.DownwardAPI.Items) > 0 {
				return true
			}
		}
	}
	return false
}

// downwardChanged reports whether what the downward API files of a pod
// show differs between two versions of it: labels and annotations (which
// may change while it runs) and its containers' resources (an in-place
// resize). A pod without downward API items never has changes.
func downwardChanged(old, cur *v1.Pod) bool {
	if !hasDownwardAPI(cur) {
		return false
	}
	if !apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!apiequality.Semantic.DeepEqual(old.Annotations, cur.Annotations) {
		return true
	}
	oc, cc := criconfig.AllContainers(old), criconfig.AllContainers(cur)
	if len(oc) != len(cc) {
		return true
	}
	for i := range cc {
		if oc[i].Name != cc[i].Name || !apiequality.Semantic.DeepEqual(oc[i].Resources, cc[i].Resources) {
			return true
		}
	}
	return false
}
