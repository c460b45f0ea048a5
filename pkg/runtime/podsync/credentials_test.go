package podsync

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/pullsecrets"
)

// fakeSecrets serves secrets by name (ObjectSource).
type fakeSecrets map[string]*v1.Secret

func (f fakeSecrets) ConfigMap(context.Context, *v1.Pod, string) (*v1.ConfigMap, error) {
	return nil, errors.New("no config maps here")
}

func (f fakeSecrets) Secret(_ context.Context, p *v1.Pod, name string) (*v1.Secret, error) {
	if s, ok := f[name]; ok {
		s = s.DeepCopy()
		s.Namespace, s.Name = p.Namespace, name
		return s, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

func dockerJSON(name, registry, user, pass string) *v1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return &v1.Secret{
		Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, registry, auth)},
	}
}

func pullPod(image string, secrets ...string) *v1.Pod {
	p := testPod("a")
	p.Spec.Containers[0].Image = image
	for _, s := range secrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

func authUsers(auths []*runtimeapi.AuthConfig) []string {
	var out []string
	for _, a := range auths {
		if a == nil {
			out = append(out, "<none>")
		} else {
			out = append(out, a.Username)
		}
	}
	return out
}

// TestSyncPodPullSecrets: the credentials of the pod's pull secrets that
// match the image's registry are tried in order until a pull works; none
// matching pulls without; a missing secret is reported after a failed
// pull; a bad secret fails the pull with a message naming it; a static
// pod's pull secrets are refused. No username or password reaches an event
// or a status message.
func TestSyncPodPullSecrets(t *testing.T) {
	const image = "reg.example:5000/team/app:1"
	secrets := fakeSecrets{
		"wrong":    dockerJSON("wrong", "reg.example:5000", "wrong-user", "wrong-pass"),
		"right":    dockerJSON("right", "reg.example:5000/team", "right-user", "right-pass"),
		"other":    dockerJSON("other", "other.example", "other-user", "other-pass"),
		"opaque":   {Type: v1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("y")}},
		"garbage":  {Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"reg":{"auth":"garbage-pass"}}`)}},
		"wildcard": dockerJSON("wildcard", "*.example:5000", "wild-user", "wild-pass"),
	}
	accept := func(a *runtimeapi.AuthConfig) error {
		if a.GetUsername() == "right-user" && a.GetPassword() == "right-pass" {
			return nil
		}
		return errors.New("pulling from host reg.example:5000 failed with status code [manifests 1]: 401 Unauthorized")
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		node       fakeNodeCredentials
		wantAuths  []string
		wantReason string
		wantMsg    string
		wantEvent  string
	}{{
		name:      "most specific key first: works at once",
		pod:       pullPod(image, "wrong", "right"),
		wantAuths: []string{"right-user"},
	}, {
		name:       "every matching credential tried, then ErrImagePull",
		pod:        pullPod(image, "wrong", "wildcard", "other"),
		wantAuths:  []string{"wrong-user", "wild-user"},
		wantReason: ReasonErrImagePull,
		wantMsg:    "401 Unauthorized",
	}, {
		name:       "no matching secret: pull without credentials",
		pod:        pullPod(image, "other", "opaque"),
		wantAuths:  []string{"<none>"},
		wantReason: ReasonErrImagePull,
		wantMsg:    "401 Unauthorized",
	}, {
		name:       "missing secret reported after the failed pull",
		pod:        pullPod(image, "absent", "wrong"),
		wantAuths:  []string{"wrong-user"},
		wantReason: ReasonErrImagePull,
		wantEvent:  "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed.",
	}, {
		name:       "bad secret: no pull, the secret named",
		pod:        pullPod(image, "right", "garbage"),
		wantReason: ReasonErrImagePull,
		wantMsg:    `image pull secret "default/garbage" (type kubernetes.io/dockercfg): registry "reg": auth is not base64`,
	}, {
		name:      "node credentials (credential provider plugins) tried after the pod's",
		pod:       pullPod(image, "wrong"),
		node:      fakeNodeCredentials{"right-user": "right-pass"},
		wantAuths: []string{"wrong-user", "right-user"},
	}, {
		name:      "node credentials for a static pod, which has no pull secrets",
		pod:       static(pullPod(image)),
		node:      fakeNodeCredentials{"right-user": "right-pass"},
		wantAuths: []string{"right-user"},
	}, {
		name:       "static pod with pull secrets refused",
		pod:        static(pullPod(image, "right")),
		wantReason: ReasonCreateContainerConfigError,
		wantMsg:    "imagePullSecrets: a static pod cannot use API objects (static pods may not reference secrets)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.s.opts.Objects = secrets
			h.rt.acceptAuth = accept
			if tt.node != nil {
				h.s.opts.NodeCredentials = tt.node
			}
			res := h.sync(tt.pod)
			if got := authUsers(h.rt.pullAuths); !slices.Equal(got, tt.wantAuths) {
				t.Errorf("pulls with %v, want %v", got, tt.wantAuths)
			}
			w := res.Waiting["a"]
			if w.Reason != tt.wantReason || !strings.Contains(w.Message, tt.wantMsg) {
				t.Errorf("waiting = %+v, want %s with %q", w, tt.wantReason, tt.wantMsg)
			}
			events := h.takeEvents()
			if tt.wantEvent != "" && !slices.Contains(events, tt.wantEvent) {
				t.Errorf("events %q lack %q", events, tt.wantEvent)
			}
			all := strings.Join(append(events, w.Message, fmt.Sprint(res.Err)), "\n")
			for _, leak := range []string{"-user", "-pass"} {
				if strings.Contains(all, leak) {
					t.Errorf("a credential leaked into events or status:\n%s", all)
				}
			}
		})
	}
}

// fakeNodeCredentials gives its one login for every image
// (NodeCredentials).
type fakeNodeCredentials map[string]string

func (f fakeNodeCredentials) Lookup(context.Context, string) []pullsecrets.Credential {
	var out []pullsecrets.Credential
	for u, p := range f {
		out = append(out, pullsecrets.Credential{Username: u, Password: p, Source: "image credential provider fake"})
	}
	return out
}

func static(p *v1.Pod) *v1.Pod {
	p.Annotations = map[string]string{pod.ConfigSourceAnnotationKey: pod.FileSource}
	return p
}

// TestSyncPodSlowPull: a pull that takes long is not cut off; it is
// reported as still going at each progress interval, and cancelled only
// by the sync's context (the pod going away).
func TestSyncPodSlowPull(t *testing.T) {
	h := newHarness(t)
	h.rt.pullGate = make(chan struct{})
	progress := make(chan time.Duration, 10)
	h.s.onPullProgress = func(_ string, elapsed time.Duration) { progress <- elapsed }
	p := pullPod("big.example/huge:1")

	done := make(chan error, 1)
	go func() { done <- h.s.SyncPod(context.Background(), p, nil).Err }()
	for i := 1; i <= 3; i++ {
		// Wait for the progress timer before stepping the fake clock.
		poll.Eventually(t, "the pull progress timer", h.clock.HasWaiters)
		h.clock.Step(DefaultPullProgressInterval)
		if got := <-progress; got != time.Duration(i)*DefaultPullProgressInterval {
			t.Fatalf("progress report %d: elapsed %v", i, got)
		}
	}
	close(h.rt.pullGate)
	if err := <-done; err != nil {
		t.Fatalf("slow pull failed: %v", err)
	}
	if ev := h.takeEvents(); !slices.ContainsFunc(ev, func(e string) bool {
		return strings.HasPrefix(e, `Normal Pulled Successfully pulled image "big.example/huge:1" in 1m30s`)
	}) {
		t.Errorf("no Pulled event with the duration: %q", ev)
	}

	// The pod goes away: the worker cancels the sync, the pull ends.
	h2 := newHarness(t)
	h2.rt.pullGate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- h2.s.SyncPod(ctx, p, nil).Err }()
	cancel()
	if err := <-done2; !errors.Is(err, ErrImagePull) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pull: %v", err)
	}
}
