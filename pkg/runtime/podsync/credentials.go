package podsync

import (
	"context"
	"errors"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/pullsecrets"
)

// ReasonFailedToRetrieveImagePullSecret is upstream's event reason for a
// failed pull of a pod some of whose pull secrets could not be read.
const ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// DefaultPullProgressInterval is how often a pull still going is logged.
const DefaultPullProgressInterval = 30 * time.Second

// errStaticPullSecrets: the Node authorizer lets a node read a secret only
// for an API pod referencing it, and upstream refuses static pods that
// reference secrets ("static pods may not reference secrets").
var errStaticPullSecrets = errors.New("imagePullSecrets: a static pod cannot use API objects (static pods may not reference secrets)")

// pullSecretNames are the names of the pod's image pull secrets, empty
// names skipped (the API once let them through; upstream ignores them).
// The API server's ServiceAccount admission has already copied the
// service account's pull secrets here when the pod named none.
func pullSecretNames(p *v1.Pod) []string {
	var out []string
	for _, ref := range p.Spec.ImagePullSecrets {
		if ref.Name != "" {
			out = append(out, ref.Name)
		}
	}
	return out
}

// checkPullSecrets refuses a static pod with pull secrets.
func checkPullSecrets(p *v1.Pod) error {
	if pod.IsStatic(p) && len(pullSecretNames(p)) > 0 {
		return errStaticPullSecrets
	}
	return nil
}

// NodeCredentials gives the node's credentials for an image
// (credentialprovider.Keyring), most specific first; none: nil.
type NodeCredentials interface {
	Lookup(ctx context.Context, image string) []pullsecrets.Credential
}

// credentials are those to try for image, in upstream's order: the pod's
// pull secrets first, then the node's (the credential provider plugins).
func (s *Syncer) credentials(ctx context.Context, kr *podKeyring, image string) []pullsecrets.Credential {
	creds := kr.ring.Lookup(image)
	if s.opts.NodeCredentials != nil {
		creds = append(creds, s.opts.NodeCredentials.Lookup(ctx, image)...)
	}
	return creds
}

// podKeyring is what a pod's pull secrets give one sync.
type podKeyring struct {
	ring pullsecrets.Keyring
	// missing names the secrets that could not be read; the pull goes on
	// without them, as upstream's does.
	missing []string
	// err: a secret does not parse. No image of the pod is pulled: which
	// credential would have been the right one is unknown.
	err error
}

// podKeyring reads the pod's pull secrets through the watching object
// source (cluster mode), which serves them from its watch after the first
// read.
func (s *Syncer) podKeyring(ctx context.Context, p *v1.Pod) *podKeyring {
	kr := &podKeyring{}
	names := pullSecretNames(p)
	if len(names) == 0 {
		return kr
	}
	src := s.opts.Objects
	for _, name := range names {
		if src == nil {
			kr.missing = append(kr.missing, name)
			continue
		}
		secret, err := src.Secret(ctx, p, name)
		if err != nil {
			klog.InfoS("Unable to retrieve pull secret, the image pull may not succeed", "pod", klog.KObj(p), "secret", klog.KRef(p.Namespace, name), "err", err)
			kr.missing = append(kr.missing, name)
			continue
		}
		entries, ok, err := pullsecrets.FromSecret(secret)
		if err != nil {
			kr.err = err
			return kr
		}
		if !ok {
			klog.InfoS("Image pull secret ignored: not of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg with its key",
				"pod", klog.KObj(p), "secret", klog.KRef(p.Namespace, name), "type", secret.Type)
			continue
		}
		kr.ring.Add(entries)
	}
	return kr
}

// pull pulls image with each matching credential in turn until one
// works, or once without credentials when none matches. It is bounded only
// by ctx, which ends when the pod goes away: a large image on a slow link
// may take long, and it is logged while it does.
func (s *Syncer) pull(ctx context.Context, p *v1.Pod, image string, creds []pullsecrets.Credential, sb *runtimeapi.PodSandboxConfig) (string, error) {
	done := make(chan struct{})
	defer close(done)
	go s.pullProgress(done, p, image)

	if len(creds) == 0 {
		return s.rt.PullImage(ctx, image, nil, sb)
	}
	var errs []error
	for _, c := range creds {
		auth := &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password}
		ref, err := s.rt.PullImage(ctx, image, auth, sb)
		if err == nil {
			return ref, nil
		}
		klog.V(2).InfoS("Pull with a credential failed", "pod", klog.KObj(p), "image", image, "source", c.Source, "err", err)
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return "", errs[0]
	}
	return "", utilerrors.NewAggregate(errs)
}

// pullProgress logs a pull that is still going every progress interval
// until done is closed.
func (s *Syncer) pullProgress(done <-chan struct{}, p *v1.Pod, image string) {
	start := s.clock.Now()
	for {
		t := s.clock.NewTimer(s.opts.PullProgressInterval)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C():
			elapsed := s.clock.Since(start).Round(time.Second)
			klog.InfoS("Still pulling image", "pod", klog.KObj(p), "image", image, "elapsed", elapsed)
			if s.onPullProgress != nil {
				s.onPullProgress(image, elapsed)
			}
		}
	}
}

// missingSecretsEvent reports, after a failed pull, the pull secrets that
// could not be read, as upstream does.
func (s *Syncer) missingSecretsEvent(p *v1.Pod, kr *podKeyring) {
	if len(kr.missing) > 0 {
		s.event(p, v1.EventTypeWarning, ReasonFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(kr.missing, ", "))
	}
}
