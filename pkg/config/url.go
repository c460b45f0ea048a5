package config

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/pod"
)

const (
	// DefaultHTTPCheckFrequency is the poll period when none is given
	// (upstream httpCheckFrequency).
	DefaultHTTPCheckFrequency = 20 * time.Second
	// httpTimeout bounds one poll, as upstream.
	httpTimeout = 10 * time.Second
)

// URLSource polls a URL serving a Pod, a PodList or a List of Pods (JSON or
// YAML) and sends a SET of its pods whenever they change.
//
// A failed poll (unreachable, non-200, a body that does not decode or
// validate) keeps the last good set and is retried on the next period; each
// distinct problem is reported once. Unlike upstream, an empty body is such
// a failure too, not "no pods": a misconfigured server must not remove every
// pod. A valid empty PodList is how a server says "no pods". Until the first
// good body the source sends nothing, so the node does not treat it as seen.
type URLSource struct {
	url      string
	header   http.Header
	nodeName string
	period   time.Duration
	out      chan<- PodUpdate
	reporter Reporter
	client   *http.Client
	adopt    *Adoptions

	// Owned by Run.
	lastBody [sha256.Size]byte // hash of the body the last SET came from
	sent     sets.Set[string]  // podVersions of the last SET; nil before the first
	problem  string            // last problem reported, "" after a good poll
}

// NewURLSource returns a source polling url with the given request headers
// every period (the default if zero) for node nodeName, sending into out
// (from Merger.Channel).
func NewURLSource(url string, header http.Header, nodeName string, period time.Duration, out chan<- PodUpdate, opts ...SourceOption) *URLSource {
	if period <= 0 {
		period = DefaultHTTPCheckFrequency
	}
	o := buildSourceOptions(opts)
	client := o.client
	if client == nil {
		client = &http.Client{Timeout: httpTimeout}
	}
	return &URLSource{
		url:      url,
		header:   header.Clone(),
		nodeName: nodeName,
		period:   period,
		out:      out,
		reporter: o.reporter,
		client:   client,
		adopt:    o.adoptions,
	}
}

// Run polls at once and then every period until ctx is done.
func (s *URLSource) Run(ctx context.Context) error {
	wait.NonSlidingUntilWithContext(ctx, s.poll, s.period)
	return nil
}

func (s *URLSource) poll(ctx context.Context) {
	body, err := s.fetch(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.fail(err)
		}
		return
	}
	sum := sha256.Sum256(body)
	if s.sent != nil && sum == s.lastBody {
		s.recovered()
		return
	}
	pods, err := s.parse(body)
	if err != nil {
		s.fail(err)
		return
	}
	s.recovered()
	if s.send(ctx, pods) {
		s.lastBody = sum
	}
}

func (s *URLSource) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header = s.header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err // *url.Error already names the method and URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: unexpected status %q", s.url, resp.Status)
	}
	if resp.ContentLength > MaxManifestSize {
		return nil, fmt.Errorf("GET %s: %w", s.url, ErrManifestTooLarge)
	}
	body, err := ReadManifest(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", s.url, err)
	}
	return body, nil
}

// parse decodes a body into this node's static pods. Any broken pod fails the
// whole body, so the set the node runs is always one the server served.
func (s *URLSource) parse(body []byte) ([]*v1.Pod, error) {
	m, err := DecodeManifest(body, true)
	if err != nil {
		return nil, err
	}
	if len(m.Warnings) > 0 {
		klog.InfoS("Pod manifest has fields nodelet ignores", "url", s.url, "warnings", m.Warnings)
	}
	pods, err := staticPods(m, Origin{Source: pod.HTTPSource, Location: s.url}, s.nodeName)
	if err != nil {
		return nil, err
	}
	names := map[string]int{}
	for i, p := range pods {
		name := p.Namespace + "/" + p.Name
		if j, ok := names[name]; ok {
			return nil, fmt.Errorf("pods %d and %d are both named %s", j, i, name)
		}
		names[name] = i
	}
	return pods, nil
}

// fail reports a problem once; the last good set stays.
func (s *URLSource) fail(err error) {
	if msg := err.Error(); msg != s.problem {
		s.problem = msg
		s.reporter.ManifestError(pod.HTTPSource, s.url, err)
	}
}

func (s *URLSource) recovered() {
	if s.problem != "" {
		klog.InfoS("Pod manifest URL is usable again", "url", s.url)
		s.problem = ""
	}
}

// send sends a SET unless its pods are the ones sent last (a body that only
// changed cosmetically). It reports whether the source is now in step with
// the pods.
func (s *URLSource) send(ctx context.Context, pods []*v1.Pod) bool {
	pods = adoptAll(s.adopt, pods)
	uids := podVersions(pods)
	if s.sent != nil && s.sent.Equal(uids) {
		return true
	}
	select {
	case s.out <- PodUpdate{Op: SET, Source: pod.HTTPSource, Pods: copyPods(pods)}:
		s.sent = uids
		klog.V(2).InfoS("Manifest URL pods changed", "url", s.url, "pods", len(pods))
		return true
	case <-ctx.Done():
		return false
	}
}
