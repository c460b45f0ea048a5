package mirror

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/pod"
)

func staticPod(uid, hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-node1", Namespace: "default", UID: types.UID(uid),
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				pod.ConfigSourceAnnotationKey:    pod.FileSource,
				pod.ConfigHashAnnotationKey:      hash,
				pod.ConfigFirstSeenAnnotationKey: "2026-01-01T00:00:00Z",
				"user":                           "kept",
			},
		},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "c", Image: "busybox:1.35"}}},
	}
}

func mirrorPod(uid, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "web-node1", Namespace: "default", UID: types.UID(uid), ResourceVersion: "7",
		Annotations: map[string]string{
			pod.ConfigSourceAnnotationKey: pod.ApiserverSource,
			pod.ConfigMirrorAnnotationKey: hash,
		},
	}}
}

func TestDecide(t *testing.T) {
	now := metav1.Now()
	deleting := mirrorPod("m1", "h1")
	deleting.DeletionTimestamp = &now
	noHash := mirrorPod("m1", "h1")
	delete(noHash.Annotations, pod.ConfigMirrorAnnotationKey)
	tests := []struct {
		name   string
		static *v1.Pod
		mirror *v1.Pod
		want   Action
	}{
		{"no mirror", staticPod("s1", "h1"), nil, Create},
		{"current", staticPod("s1", "h1"), mirrorPod("m1", "h1"), None},
		{"static edited", staticPod("s1", "h2"), mirrorPod("m1", "h1"), Replace},
		{"deleted by a user", staticPod("s1", "h1"), deleting, Replace},
		{"mirror without hash", staticPod("s1", "h1"), noHash, Replace},
	}
	for _, tc := range tests {
		if got := Decide(tc.static, tc.mirror); got != tc.want {
			t.Errorf("%s: Decide = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestBuild(t *testing.T) {
	static := staticPod("s1", "h1")
	static.Namespace = ""
	static.ResourceVersion = "3"
	orig := static.DeepCopy()
	m := Build(static, "node1", "node-uid")

	if m.UID != "" || m.ResourceVersion != "" {
		t.Errorf("server-side fields copied: uid %q rv %q", m.UID, m.ResourceVersion)
	}
	if m.Name != "web-node1" || m.Namespace != "default" || m.Spec.NodeName != "node1" {
		t.Errorf("identity: %s/%s on %q", m.Namespace, m.Name, m.Spec.NodeName)
	}
	if m.Annotations[pod.ConfigMirrorAnnotationKey] != "h1" || m.Annotations["user"] != "kept" ||
		m.Annotations[pod.ConfigSourceAnnotationKey] != pod.FileSource {
		t.Errorf("annotations: %v", m.Annotations)
	}
	if m.Labels["app"] != "web" {
		t.Errorf("labels: %v", m.Labels)
	}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("owner references: %v", m.OwnerReferences)
	}
	o := m.OwnerReferences[0]
	if o.Kind != "Node" || o.APIVersion != "v1" || o.Name != "node1" || o.UID != "node-uid" || o.Controller == nil || !*o.Controller {
		t.Errorf("owner: %+v", o)
	}
	if !IsMirrorOf(m, static) {
		t.Error("a built mirror is not a mirror of its static pod")
	}
	m.Annotations["x"], m.Labels["x"], m.Spec.Containers[0].Image = "y", "y", "other"
	if static.Annotations["x"] != "" || static.Labels["x"] != "" || static.Spec.Containers[0].Image != orig.Spec.Containers[0].Image {
		t.Error("Build shares maps or spec with the static pod")
	}
	if _, ok := static.Annotations[pod.ConfigMirrorAnnotationKey]; ok {
		t.Error("static pod got the mirror annotation")
	}
}
