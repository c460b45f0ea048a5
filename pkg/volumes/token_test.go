package volumes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/pkg/kube/kubefake"
)

func TestNeedsRefresh(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hour := issued.Add(time.Hour)
	year := issued.Add(365 * 24 * time.Hour)
	tests := []struct {
		name    string
		expires time.Time
		age     time.Duration
		want    bool
	}{
		{"fresh", hour, 10 * time.Minute, false},
		{"just before 80 %", hour, 47*time.Minute + 59*time.Second, false},
		{"at 80 %", hour, 48 * time.Minute, true},
		{"expired", hour, 2 * time.Hour, true},
		{"extended token, a day minus a second", year, 24*time.Hour - time.Second, false},
		{"extended token, a day old", year, 24 * time.Hour, true},
		{"already expired when issued", issued, 0, true},
	}
	for _, tt := range tests {
		if got := needsRefresh(issued, tt.expires, issued.Add(tt.age)); got != tt.want {
			t.Errorf("%s: needsRefresh = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// tokenServer answers TokenRequests on a fake clientset, recording them;
// tokens live lifetime (the requested one when 0).
type tokenServer struct {
	mu       sync.Mutex
	clock    *clocktesting.FakeClock
	lifetime time.Duration
	fail     error
	requests []*authenticationv1.TokenRequest
	names    []string // namespace/serviceaccount of each request
}

func (s *tokenServer) install(c *fake.Clientset) {
	c.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		ca := a.(k8stesting.CreateActionImpl)
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.fail != nil {
			return true, nil, s.fail
		}
		s.requests = append(s.requests, tr)
		s.names = append(s.names, a.GetNamespace()+"/"+ca.Name)
		life := s.lifetime
		if life == 0 {
			life = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
		}
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               fmt.Sprintf("token-%d", len(s.requests)),
			ExpirationTimestamp: metav1.NewTime(s.clock.Now().Add(life)),
		}
		return true, tr, nil
	})
}

func (s *tokenServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func tokenPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{ServiceAccountName: "builder"},
	}
}

func TestTokenManagerRequestAndCache(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	srv := &tokenServer{clock: clk}
	srv.install(client)
	m := NewTokenManager(kubefake.Wrap(client), clk)
	ctx := context.Background()
	pod := tokenPod()
	proj := &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}

	tok, err := m.Token(ctx, pod, proj)
	if err != nil || tok != "token-1" {
		t.Fatalf("Token = %q, %v", tok, err)
	}
	req := srv.requests[0].Spec
	if srv.names[0] != "default/builder" || *req.ExpirationSeconds != 3607 || len(req.Audiences) != 0 {
		t.Errorf("request %s %+v: want default/builder, 3607 s, the API server's audience", srv.names[0], req)
	}
	if b := req.BoundObjectRef; b == nil || b.Kind != "Pod" || b.APIVersion != "v1" || b.Name != "web" || b.UID != "uid-1" {
		t.Errorf("boundObjectRef = %+v, want the pod", b)
	}

	// Cached until 80 % of its life.
	clk.Step(47 * time.Minute)
	if tok, _ := m.Token(ctx, pod, proj); tok != "token-1" || srv.count() != 1 {
		t.Errorf("at 47 min: %q after %d requests, want the cached token", tok, srv.count())
	}
	clk.Step(2 * time.Minute)
	if tok, _ := m.Token(ctx, pod, proj); tok != "token-2" {
		t.Errorf("at 49 min: %q, want a new token", tok)
	}

	// Another audience is another token; no expiration asks for the default.
	aud := &v1.ServiceAccountTokenProjection{Path: "vault", Audience: "vault"}
	if tok, _ := m.Token(ctx, pod, aud); tok != "token-3" {
		t.Errorf("audience token = %q", tok)
	}
	if req := srv.requests[2].Spec; len(req.Audiences) != 1 || req.Audiences[0] != "vault" || *req.ExpirationSeconds != DefaultTokenExpirationSeconds {
		t.Errorf("audience request = %+v", req)
	}

	// Forget drops the pod's tokens.
	m.Forget(pod.UID)
	if tok, _ := m.Token(ctx, pod, proj); tok != "token-4" {
		t.Errorf("after Forget: %q, want a new token", tok)
	}
}

func TestTokenManagerKeepsValidTokenWhenRenewalFails(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	srv := &tokenServer{clock: clk}
	srv.install(client)
	m := NewTokenManager(kubefake.Wrap(client), clk)
	ctx := context.Background()
	pod := tokenPod()
	proj := &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](600)}
	if _, err := m.Token(ctx, pod, proj); err != nil {
		t.Fatal(err)
	}
	srv.fail = errors.New("API server down")
	clk.Step(9 * time.Minute) // due, still valid
	if tok, err := m.Token(ctx, pod, proj); err != nil || tok != "token-1" {
		t.Errorf("renewal failed while valid: %q, %v; want the current token", tok, err)
	}
	clk.Step(2 * time.Minute) // expired
	if _, err := m.Token(ctx, pod, proj); err == nil {
		t.Error("expired token and failing renewal: no error")
	}
}
