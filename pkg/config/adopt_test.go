package config

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/pod"
)

func TestAdopt(t *testing.T) {
	up := Running{UID: "upstream-uid", Hash: "upstream-uid"}
	for _, tc := range []struct {
		name           string
		uid, hash      string
		r              Running
		pin            string
		pinned         bool
		wantUID        types.UID
		wantHash, wPin string
	}{
		{name: "nothing runs", uid: "mine", hash: "h1", wantUID: "mine", wantHash: "h1"},
		{name: "runs under nodelet's own UID", uid: "mine", hash: "h2", r: Running{UID: "mine", Hash: "h1"}, wantUID: "mine", wantHash: "h2"},
		{name: "first seen: the running identity, pinned", uid: "mine", hash: "h1", r: up, wantUID: "upstream-uid", wantHash: "upstream-uid", wPin: "h1"},
		{name: "unchanged manifest keeps the running hash", uid: "mine", hash: "h1", r: up, pin: "h1", pinned: true, wantUID: "upstream-uid", wantHash: "upstream-uid", wPin: "h1"},
		{name: "an edit keeps the UID, takes nodelet's hash", uid: "mine", hash: "h2", r: up, pin: "h1", pinned: true, wantUID: "upstream-uid", wantHash: "h2", wPin: "h1"},
		{name: "edited back: the running hash again", uid: "mine", hash: "h1", r: up, pin: "h1", pinned: true, wantUID: "upstream-uid", wantHash: "upstream-uid", wPin: "h1"},
		{name: "no hash on the sandbox: upstream's hash is its UID", uid: "mine", hash: "h1", r: Running{UID: "u"}, wantUID: "u", wantHash: "u", wPin: "h1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, hash, pin := Adopt(types.UID(tc.uid), tc.hash, tc.r, tc.pin, tc.pinned)
			if uid != tc.wantUID || hash != tc.wantHash || pin != tc.wPin {
				t.Errorf("Adopt = %q %q %q, want %q %q %q", uid, hash, pin, tc.wantUID, tc.wantHash, tc.wPin)
			}
		})
	}
}

func TestAdoptionsApply(t *testing.T) {
	static := func(hash string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node", Namespace: "kube-system", UID: "mine",
			Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.FileSource, pod.ConfigHashAnnotationKey: hash}}}
	}
	a := NewAdoptions(map[AdoptKey]Running{{Source: pod.FileSource, Namespace: "kube-system", Name: "etcd-node"}: {UID: "up", Hash: "up"}})
	in := static("h1")
	got := a.Apply(in)
	if got.UID != "up" || got.Annotations[pod.ConfigHashAnnotationKey] != "up" {
		t.Fatalf("adopted %s %v", got.UID, got.Annotations)
	}
	if in.UID != "mine" || in.Annotations[pod.ConfigHashAnnotationKey] != "h1" {
		t.Errorf("Apply modified its argument: %s %v", in.UID, in.Annotations)
	}
	if got := a.Apply(static("h2")); got.UID != "up" || got.Annotations[pod.ConfigHashAnnotationKey] != "h2" {
		t.Errorf("after an edit: %s %v, want uid up and nodelet's hash", got.UID, got.Annotations)
	}
	other := static("h1")
	other.Annotations[pod.ConfigSourceAnnotationKey] = pod.HTTPSource
	if got := a.Apply(other); got != other {
		t.Errorf("a pod of another source was adopted: %s", got.UID)
	}
	var none *Adoptions
	if got := none.Apply(in); got != in {
		t.Errorf("nil adoptions changed the pod")
	}
}
