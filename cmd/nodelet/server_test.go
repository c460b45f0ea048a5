package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/kube/kubefake"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/server"
)

// loadOptions resolves flags and a KubeletConfiguration file as main does.
func loadOptions(t *testing.T, config string, flags ...string) *options.Options {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+config), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := options.NewFlagSet("nodelet")
	if err := fs.Parse(append([]string{"--config", file, "--hostname-override", "node-a", "--root-dir", dir}, flags...)); err != nil {
		t.Fatal(err)
	}
	opts, _, err := options.Load(fs)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// fakeAPIServer answers TokenReviews (token "good" is alice) and
// SubjectAccessReviews (alice may read nodes/stats only).
func fakeAPIServer() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if r.Spec.Token == "good" {
			r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
		}
		return true, r, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = r.Spec.User == "alice" && ra.Resource == "nodes" && ra.Subresource == "stats" && ra.Name == "node-a"
		return true, r, nil
	})
	return c
}

func TestNodeAuthFromKubeletConfiguration(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	type req struct {
		path, token string
		want        int
	}
	tests := []struct {
		name   string
		config string
		flags  []string
		kube   bool
		reqs   []req
	}{
		{
			name: "config file defaults: webhook authentication and authorization",
			kube: true,
			reqs: []req{
				{"/stats/summary", "", 401},
				{"/stats/summary", "bad", 401},
				{"/stats/summary", "good", 200},
				{"/pods", "good", 403},
				{"/exec/default/p/c", "good", 403},
			},
		},
		{
			name:   "anonymous allowed, AlwaysAllow",
			config: "authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n",
			reqs:   []req{{"/pods", "", 200}, {"/pods", "good", 200}},
		},
		{
			name:   "flags override the file",
			config: "authentication: {anonymous: {enabled: true}}\nauthorization: {mode: AlwaysAllow}\n",
			flags:  []string{"--anonymous-auth=false", "--authorization-mode=Webhook"},
			kube:   true,
			reqs:   []req{{"/stats/summary", "", 401}, {"/stats/summary", "good", 200}, {"/metrics", "good", 403}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := loadOptions(t, tc.config, tc.flags...)
			var client kube.Interface // nil: standalone
			if tc.kube {
				client = kubefake.Wrap(fakeAPIServer())
			}
			auth, _, err := nodeAuth(opts, opts.Hostname, client)
			if err != nil {
				t.Fatal(err)
			}
			h := server.WithAuth(ok, auth)
			for _, r := range tc.reqs {
				hr := httptest.NewRequest("GET", r.path, nil)
				if r.token != "" {
					hr.Header.Set("Authorization", "Bearer "+r.token)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, hr)
				if rec.Code != r.want {
					t.Errorf("GET %s token %q: %d, want %d (%s)", r.path, r.token, rec.Code, r.want, rec.Body)
				}
			}
		})
	}
}

func TestNodeAuthStandalone(t *testing.T) {
	// A config file turns webhooks on; without an API server the node API
	// is not served, and nodelet still starts.
	_, _, err := nodeAuth(loadOptions(t, ""), "node-a", nil)
	if !errors.Is(err, errNoNodeAPI) {
		t.Errorf("webhooks without an API server: %v, want errNoNodeAPI", err)
	}
	opts := loadOptions(t, "authentication: {webhook: {enabled: false}, x509: {clientCAFile: /does/not/exist}}\nauthorization: {mode: AlwaysAllow}\n")
	if _, _, err := nodeAuth(opts, "node-a", nil); err == nil || errors.Is(err, errNoNodeAPI) {
		t.Errorf("missing client CA file: %v, want a start-up error", err)
	}
	_, err = newAPIServer(loadOptions(t, "enableServer: false\n"), apiServerDeps{}, server.APIDeps{})
	if !errors.Is(err, errNoNodeAPI) {
		t.Errorf("enableServer false: %v", err)
	}
}
