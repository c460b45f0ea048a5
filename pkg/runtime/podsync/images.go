package podsync

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
	"github.com/nodelet/nodelet/pkg/security"
)

// imageResult is the outcome of making one image available.
type imageResult struct {
	ref string // resolved image to create containers from
	// user is the image's user when ImageStatus was read, else nil.
	user       *imageUser
	waiting    *runtime.ContainerWaiting
	err        error
	retryAfter time.Duration
}

// resolveImages starts making each distinct image of the containers to
// start available, concurrently (and concurrently with whatever the caller
// does next, normally sandbox creation), and returns, per image, a function
// that waits for the outcome. The first container naming an image decides
// its pull policy.
func (s *Syncer) resolveImages(ctx context.Context, pod *v1.Pod, starts []plan.Start, sb *runtimeapi.PodSandboxConfig) map[string]func() imageResult {
	out := make(map[string]func() imageResult, len(starts))
	// The pull secrets are read once per sync, and only when an image is
	// pulled.
	keyring := sync.OnceValue(func() *podKeyring { return s.podKeyring(ctx, pod) })
	for _, st := range starts {
		if _, ok := out[st.Spec.Image]; ok {
			continue
		}
		c := st.Spec
		ch := make(chan imageResult, 1)
		go func() { ch <- s.ensureImage(ctx, pod, c, sb, keyring) }()
		out[c.Image] = sync.OnceValue(func() imageResult { return <-ch })
	}
	return out
}

// ensureImage applies the container's pull policy: one ImageStatus call
// when the image is present (IfNotPresent, Never), a pull otherwise, unless
// earlier pulls of it for this pod failed recently. A pull uses the pod's
// pull secrets that match the image's registry, then the node's
// credentials for it.
func (s *Syncer) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *runtimeapi.PodSandboxConfig, keyring func() *podKeyring) imageResult {
	image := c.Image
	policy := pullPolicy(c)
	if policy != v1.PullAlways {
		img, err := s.rt.ImageStatus(ctx, image)
		if err != nil && ctx.Err() != nil {
			return abandoned(ctx, ErrImageInspect, image)
		}
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", image, err)
			s.event(pod, v1.EventTypeWarning, ReasonFailed, "%s", msg)
			return imageResult{
				waiting: &runtime.ContainerWaiting{Reason: ReasonImageInspectError, Message: msg},
				err:     fmt.Errorf("%w: %w", ErrImageInspect, err),
			}
		}
		if img != nil {
			s.event(pod, v1.EventTypeNormal, ReasonPulled, "Container image %q already present on machine", image)
			return imageResult{ref: img.Id, user: userOf(img)}
		}
		if policy == v1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
			s.event(pod, v1.EventTypeWarning, ReasonErrImageNeverPull, "%s", msg)
			return imageResult{
				waiting: &runtime.ContainerWaiting{Reason: ReasonErrImageNeverPull, Message: msg},
				err:     fmt.Errorf("image %q: %w", image, ErrImageNeverPull),
			}
		}
	}

	if remaining := s.pulls.remaining(pod.UID, image, s.clock.Now()); remaining > 0 {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		s.event(pod, v1.EventTypeNormal, ReasonBackOff, "%s", msg)
		return imageResult{
			waiting:    &runtime.ContainerWaiting{Reason: ReasonImagePullBackOff, Message: msg},
			err:        fmt.Errorf("image %q: %w", image, ErrImagePullBackOff),
			retryAfter: remaining,
		}
	}
	kr := keyring()
	if kr.err != nil {
		period := s.pulls.failed(pod.UID, image, s.clock.Now())
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Failed to pull image %q: %v", image, kr.err)
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %s", ReasonErrImagePull)
		return imageResult{
			waiting:    &runtime.ContainerWaiting{Reason: ReasonErrImagePull, Message: kr.err.Error()},
			err:        fmt.Errorf("%w: %w", ErrImagePull, kr.err),
			retryAfter: period,
		}
	}
	s.event(pod, v1.EventTypeNormal, ReasonPulling, "Pulling image %q", image)
	start := s.clock.Now()
	ref, err := s.pull(ctx, pod, image, s.credentials(ctx, kr, image), sb)
	s.observe(OpPullImage, start, err)
	if err != nil && ctx.Err() != nil {
		return abandoned(ctx, ErrImagePull, image)
	}
	if err != nil {
		period := s.pulls.failed(pod.UID, image, s.clock.Now())
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Failed to pull image %q: %v", image, err)
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %s", ReasonErrImagePull)
		s.missingSecretsEvent(pod, kr)
		return imageResult{
			waiting:    &runtime.ContainerWaiting{Reason: ReasonErrImagePull, Message: err.Error()},
			err:        fmt.Errorf("%w: %w", ErrImagePull, err),
			retryAfter: period,
		}
	}
	s.pulls.succeeded(pod.UID, image)
	took := s.clock.Since(start)
	s.event(pod, v1.EventTypeNormal, ReasonPulled, "Successfully pulled image %q in %v", image, took.Round(time.Millisecond))
	if m, ok := s.metrics.(ImagePullMetrics); ok {
		// The size is what the runtime says of the pulled image; 0
		// (unknown) when it cannot say.
		var size uint64
		if st, err := s.rt.ImageStatus(ctx, ref); err == nil && st != nil {
			size = st.Size
		}
		m.ObserveImagePull(took, size)
	}
	return imageResult{ref: ref}
}

// abandoned is the outcome of an image check or pull whose sync ended
// before it did (it failed elsewhere, or the pod went away): nothing is
// known about the image, so there is no event, no waiting reason and no
// back-off; the next sync asks again.
func abandoned(ctx context.Context, class error, image string) imageResult {
	return imageResult{err: fmt.Errorf("%w: image %q: the sync ended: %w", class, image, context.Cause(ctx))}
}

// pullPolicy is the container's policy, defaulted as the API does: Always
// for an untagged or :latest image, IfNotPresent otherwise.
func pullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if strings.Contains(c.Image, "@") {
		return v1.PullIfNotPresent
	}
	name := c.Image[strings.LastIndex(c.Image, "/")+1:]
	_, tag, tagged := strings.Cut(name, ":")
	if !tagged || tag == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// pullBackoff is the image pull back-off per pod and image. flowcontrol
// keeps the periods; the failure times are kept here so the remaining wait
// can be reported.
type pullBackoff struct {
	b        *flowcontrol.Backoff
	mu       sync.Mutex
	failedAt map[string]time.Time
}

func newPullBackoff(b *flowcontrol.Backoff) *pullBackoff {
	return &pullBackoff{b: b, failedAt: map[string]time.Time{}}
}

func pullKey(uid types.UID, image string) string { return string(uid) + "/" + image }

func (p *pullBackoff) remaining(uid types.UID, image string, now time.Time) time.Duration {
	key := pullKey(uid, image)
	p.mu.Lock()
	t, ok := p.failedAt[key]
	p.mu.Unlock()
	if !ok || !p.b.IsInBackOffSince(key, t) {
		return 0
	}
	return max(t.Add(p.b.Get(key)).Sub(now), 0)
}

// failed records a failed pull and returns the back-off it starts.
func (p *pullBackoff) failed(uid types.UID, image string, now time.Time) time.Duration {
	key := pullKey(uid, image)
	p.b.Next(key, now)
	p.mu.Lock()
	p.failedAt[key] = now
	p.mu.Unlock()
	return p.b.Get(key)
}

func (p *pullBackoff) succeeded(uid types.UID, image string) {
	key := pullKey(uid, image)
	p.b.DeleteEntry(key)
	p.mu.Lock()
	delete(p.failedAt, key)
	p.mu.Unlock()
}

// forgetPod drops the entries of a pod that is gone.
func (p *pullBackoff) forgetPod(uid types.UID) {
	prefix := string(uid) + "/"
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.failedAt {
		if strings.HasPrefix(key, prefix) {
			p.b.DeleteEntry(key)
			delete(p.failedAt, key)
		}
	}
}

// imageUser is the user an image runs as: a uid, else a name; neither
// means root.
type imageUser struct {
	uid  *int64
	name string
}

func userOf(img *runtimeapi.Image) *imageUser {
	u := &imageUser{name: img.GetUsername()}
	if img.GetUid() != nil {
		uid := img.GetUid().GetValue()
		u.uid, u.name = &uid, ""
	}
	return u
}

// imageUserOf returns the user of the container's resolved image, reading
// it from the runtime only when the container's config depends on it and
// ensureImage did not read it (after a pull).
func (s *Syncer) imageUserOf(ctx context.Context, pod *v1.Pod, c *v1.Container, img imageResult) (*imageUser, error) {
	if img.user != nil || !security.NeedsImageUser(pod, c) {
		return img.user, nil
	}
	st, err := s.rt.ImageStatus(ctx, img.ref)
	if err != nil {
		return nil, fmt.Errorf("read the user of image %q: %w", c.Image, err)
	}
	if st == nil {
		return nil, fmt.Errorf("read the user of image %q: image %s is gone", c.Image, img.ref)
	}
	return userOf(st), nil
}
