package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// TestClientsetPaths checks that every resource goes to the path and verb
// the API server serves it on. The fake server answers JSON, which the
// client accepts besides its preferred protobuf.
func TestClientsetPaths(t *testing.T) {
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Method + " " + r.URL.Path
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
	}))
	defer srv.Close()
	cs, err := NewForConfig(&rest.Config{Host: srv.URL, QPS: 50, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		want string
		call func() error
	}{
		{"GET /api/v1/namespaces/ns/pods/p", func() error { _, err := cs.Pods("ns").Get(ctx, "p", metav1.GetOptions{}); return err }},
		{"GET /api/v1/pods", func() error { _, err := cs.Pods("").List(ctx, metav1.ListOptions{}); return err }},
		{"PATCH /api/v1/namespaces/ns/pods/p/status", func() error {
			_, err := cs.Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte("{}"), metav1.PatchOptions{}, "status")
			return err
		}},
		{"DELETE /api/v1/namespaces/ns/pods/p", func() error { return cs.Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}) }},
		{"POST /api/v1/nodes", func() error { _, err := cs.Nodes().Create(ctx, &corev1.Node{}, metav1.CreateOptions{}); return err }},
		{"PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", func() error {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "kube-node-lease"}}
			_, err := cs.Leases("kube-node-lease").Update(ctx, l, metav1.UpdateOptions{})
			return err
		}},
		{"GET /api/v1/namespaces/ns/configmaps/c", func() error { _, err := cs.ConfigMaps("ns").Get(ctx, "c", metav1.GetOptions{}); return err }},
		{"GET /api/v1/namespaces/ns/secrets/s", func() error { _, err := cs.Secrets("ns").Get(ctx, "s", metav1.GetOptions{}); return err }},
		{"POST /api/v1/namespaces/ns/serviceaccounts/sa/token", func() error {
			_, err := cs.ServiceAccounts("ns").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}},
		{"POST /apis/authentication.k8s.io/v1/tokenreviews", func() error {
			_, err := cs.TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
			return err
		}},
		{"POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func() error {
			_, err := cs.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{})
			return err
		}},
		{"POST /api/v1/namespaces/ns/events", func() error {
			_, err := EventSink{Client: cs}.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}})
			return err
		}},
		{"PATCH /api/v1/namespaces/ns/events/e", func() error {
			_, err := EventSink{Client: cs}.Patch(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}}, []byte("{}"))
			return err
		}},
	}
	for _, tc := range tests {
		// The answer is a Status, not the object asked for: only the
		// request matters here.
		_ = tc.call()
		mu.Lock()
		if got != tc.want {
			t.Errorf("request = %q, want %q", got, tc.want)
		}
		got = ""
		mu.Unlock()
	}
}

// TestSchemeKnowsKinds guards the manifest decoder and the event recorder,
// which use Scheme: it must know core/v1 with its list kinds.
func TestSchemeKnowsKinds(t *testing.T) {
	for _, obj := range []runtime.Object{&corev1.Pod{}, &corev1.PodList{}, &corev1.List{}, &corev1.Event{}, &coordinationv1.Lease{}, &authorizationv1.SubjectAccessReview{}} {
		if gvks, _, err := Scheme.ObjectKinds(obj); err != nil || len(gvks) == 0 {
			t.Errorf("%T: %v", obj, err)
		}
	}
}
