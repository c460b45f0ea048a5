package volumes

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/pkg/kube"
)

// DefaultTokenExpirationSeconds is the lifetime asked for when a projection
// names none, as the API defaults it (one hour).
const DefaultTokenExpirationSeconds = 3600

// A token is renewed once it has lived 80 % of its lifetime, or 24 h
// whatever its lifetime: the API server may hand out tokens valid far
// longer than asked (--service-account-extend-token-expiration turns the
// 3607 s of kube-api-access volumes into a year), and a day-old token is
// renewed anyway so that a compromised one is not useful for long.
const (
	refreshPercent = 80
	maxTokenAge    = 24 * time.Hour
)

// TokenManager requests service-account tokens bound to pods through the
// TokenRequest API and caches each until it is due for renewal. Safe for
// concurrent use.
type TokenManager struct {
	client kube.Interface
	clock  clock.Clock

	mu    sync.Mutex
	cache map[tokenKey]*cachedToken
}

// tokenKey is what makes two requests interchangeable: the same account,
// audience and lifetime for the same pod.
type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	podUID                              types.UID
}

type cachedToken struct {
	token           string
	issued, expires time.Time
}

// NewTokenManager returns a TokenManager using client (the node's
// credentials) and clk (nil: the real clock).
func NewTokenManager(client kube.Interface, clk clock.Clock) *TokenManager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &TokenManager{client: client, clock: clk, cache: map[tokenKey]*cachedToken{}}
}

// Token returns a token for pod's service account as the projection asks:
// the cached one unless it is due for renewal. If renewing fails while the
// cached token is still valid, that one is returned (and the failure
// logged), so an API server outage does not break running pods.
func (m *TokenManager) Token(ctx context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (string, error) {
	key := keyFor(pod, p)
	now := m.clock.Now()
	m.mu.Lock()
	cached := m.cache[key]
	m.mu.Unlock()
	if cached != nil && !needsRefresh(cached.issued, cached.expires, now) {
		return cached.token, nil
	}

	tr, err := m.client.ServiceAccounts(key.namespace).CreateToken(ctx, key.serviceAccount,
		tokenRequest(pod, key), metav1.CreateOptions{})
	if err == nil && tr.Status.Token == "" {
		err = fmt.Errorf("empty token in the response")
	}
	if err != nil {
		err = fmt.Errorf("request token for service account %s/%s: %w", key.namespace, key.serviceAccount, err)
		if cached != nil && now.Before(cached.expires) {
			klog.ErrorS(err, "Could not renew service account token, using the current one until it expires",
				"pod", klog.KObj(pod), "expires", cached.expires)
			return cached.token, nil
		}
		return "", err
	}
	fresh := &cachedToken{token: tr.Status.Token, issued: now, expires: tr.Status.ExpirationTimestamp.Time}
	m.mu.Lock()
	m.cache[key] = fresh
	m.mu.Unlock()
	klog.V(4).InfoS("Got service account token", "pod", klog.KObj(pod), "serviceAccount", key.serviceAccount,
		"audience", key.audience, "expires", fresh.expires)
	return fresh.token, nil
}

// Forget drops the tokens of a pod.
func (m *TokenManager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.cache {
		if k.podUID == uid {
			delete(m.cache, k)
		}
	}
}

func keyFor(pod *v1.Pod, p *v1.ServiceAccountTokenProjection) tokenKey {
	exp := int64(DefaultTokenExpirationSeconds)
	if p.ExpirationSeconds != nil {
		exp = *p.ExpirationSeconds
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return tokenKey{namespace: pod.Namespace, serviceAccount: sa, audience: p.Audience, expirationSeconds: exp, podUID: pod.UID}
}

// tokenRequest builds the request: bound to the pod (NodeRestriction
// admits a node's request only for a pod on that node, named with its
// UID), for the projection's audience or, with none, the API server's own.
func tokenRequest(pod *v1.Pod, key tokenKey) *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &key.expirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			},
		},
	}
	if key.audience != "" {
		tr.Spec.Audiences = []string{key.audience}
	}
	return tr
}

// needsRefresh reports whether a token issued and expiring at the given
// times is due for renewal at now.
func needsRefresh(issued, expires, now time.Time) bool {
	lifetime := expires.Sub(issued)
	due := issued.Add(lifetime * refreshPercent / 100)
	return !now.Before(due) || now.Sub(issued) >= maxTokenAge
}
