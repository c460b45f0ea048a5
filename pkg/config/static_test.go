package config

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/pkg/pod"
)

func manifestPod() *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.35"}}},
	}
}

var fileOrigin = Origin{Source: pod.FileSource, Location: "/etc/kubernetes/manifests/web.yaml"}

func TestStaticPodUIDAndHash(t *testing.T) {
	base := StaticPodUID(manifestPod(), fileOrigin, "node-1")
	if len(base) != 32 || strings.Trim(string(base), "0123456789abcdef") != "" {
		t.Fatalf("UID %q is not 32 hex digits", base)
	}
	baseHash, err := StaticPodHash(manifestPod(), fileOrigin, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	changedImage := manifestPod()
	changedImage.Spec.Containers[0].Image = "busybox:1.36"
	withUID := manifestPod()
	withUID.UID = "manifest-uid"
	otherNS := manifestPod()
	otherNS.Namespace = "kube-system"
	explicitDefaultNS := manifestPod()
	explicitDefaultNS.Namespace = "default"
	renamed := manifestPod()
	renamed.Name = "web2"

	tests := []struct {
		name              string
		pod               *v1.Pod
		origin            Origin
		node              string
		sameUID, sameHash bool
	}{
		{"same content, source and node", manifestPod(), fileOrigin, "node-1", true, true},
		{"other node", manifestPod(), fileOrigin, "node-2", false, false},
		{"other file", manifestPod(), Origin{pod.FileSource, "/etc/kubernetes/manifests/web2.yaml"}, "node-1", false, false},
		{"other source kind, same location", manifestPod(), Origin{pod.HTTPSource, fileOrigin.Location}, "node-1", false, false},
		// An edit keeps the identity (UPDATE, restart of what changed only).
		{"other content", changedImage, fileOrigin, "node-1", true, false},
		{"uid in the manifest is content, not identity", withUID, fileOrigin, "node-1", true, false},
		{"other namespace", otherNS, fileOrigin, "node-1", false, false},
		{"explicit default namespace", explicitDefaultNS, fileOrigin, "node-1", true, false},
		{"other name", renamed, fileOrigin, "node-1", false, false},
		// Separators keep the fields apart.
		{"location/node boundary", manifestPod(), Origin{pod.FileSource, fileOrigin.Location + "\x00node"}, "-1", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid := StaticPodUID(tt.pod, tt.origin, tt.node)
			if (uid == base) != tt.sameUID {
				t.Errorf("UID %s vs base %s: same = %v, want %v", uid, base, uid == base, tt.sameUID)
			}
			hash, err := StaticPodHash(tt.pod, tt.origin, tt.node)
			if err != nil {
				t.Fatal(err)
			}
			if (hash == baseHash) != tt.sameHash {
				t.Errorf("hash %s vs base %s: same = %v, want %v", hash, baseHash, hash == baseHash, tt.sameHash)
			}
		})
	}
}

// Cosmetic differences in the manifest file do not change the hash: it hashes
// the decoded pod, not the bytes.
func TestStaticPodUIDIgnoresFormatting(t *testing.T) {
	yamlDoc := "# comment\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - image: busybox:1.35\n    name: app\n"
	jsonDoc := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"busybox:1.35"}]}}`
	var got []string
	for _, doc := range []string{yamlDoc, jsonDoc} {
		m, err := DecodeManifest([]byte(doc), false)
		if err != nil {
			t.Fatal(err)
		}
		hash, err := StaticPodHash(m.Pods[0], fileOrigin, "node-1")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, hash)
	}
	if got[0] != got[1] {
		t.Errorf("YAML and JSON of the same pod: hashes %s != %s", got[0], got[1])
	}
}

func TestStaticPod(t *testing.T) {
	in := manifestPod()
	in.UID = "from-manifest"
	in.Annotations = map[string]string{"team": "x", pod.ConfigHashAnnotationKey: "forged"}
	in.Status.Phase = v1.PodSucceeded
	now := metav1.Now()
	in.DeletionTimestamp = &now
	in.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(5))}}
	orig := in.DeepCopy()

	p, err := StaticPod(in, fileOrigin, "Node-1")
	if err != nil {
		t.Fatal(err)
	}
	uid := StaticPodUID(orig, fileOrigin, "Node-1")
	hash, _ := StaticPodHash(orig, fileOrigin, "Node-1")
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", p.Name, "web-node-1"},
		{"namespace", p.Namespace, "default"},
		{"uid", p.UID, uid},
		{"nodeName", p.Spec.NodeName, "Node-1"},
		{"hash annotation", p.Annotations[pod.ConfigHashAnnotationKey], hash},
		{"source annotation", p.Annotations[pod.ConfigSourceAnnotationKey], "file"},
		{"user annotation", p.Annotations["team"], "x"},
		{"phase", p.Status.Phase, v1.PodPending},
		{"deletionTimestamp cleared", p.DeletionTimestamp == nil, true},
		{"one NoExecute toleration", len(p.Spec.Tolerations), 1},
		{"toleration has no seconds", p.Spec.Tolerations[0].TolerationSeconds == nil, true},
		{"defaults applied", p.Spec.RestartPolicy, v1.RestartPolicyAlways},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if in.Name != orig.Name || in.Annotations[pod.ConfigHashAnnotationKey] != "forged" {
		t.Error("StaticPod modified its input")
	}

	plain, err := StaticPod(manifestPod(), Origin{pod.HTTPSource, "http://example/pods"}, "n")
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	if len(plain.Spec.Tolerations) != 1 || plain.Spec.Tolerations[0] != want {
		t.Errorf("tolerations = %+v, want [%+v]", plain.Spec.Tolerations, want)
	}
}

func TestStaticPodErrors(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*v1.Pod)
		node string
		want string
	}{
		{"no name", func(p *v1.Pod) { p.Name = "" }, "n", "metadata.name: Required value"},
		{"name too long with node suffix", func(p *v1.Pod) { p.Name = strings.Repeat("a", 250) }, "node", "metadata.name: Invalid value"},
		{"bad node name", func(p *v1.Pod) {}, "Node_1", `metadata.name: Invalid value: "web-node_1"`},
		{"no containers", func(p *v1.Pod) { p.Spec.Containers = nil }, "n", "spec.containers: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := manifestPod()
			tt.mod(p)
			_, err := StaticPod(p, fileOrigin, tt.node)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
