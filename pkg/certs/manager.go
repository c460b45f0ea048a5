package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"sync/atomic"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/metrics"
)

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: at 70-90 % of its lifetime, where in that window given by
// jitter in [0,1), as upstream, so nodes that joined together do not all
// renew at once.
func RotationDeadline(notBefore, notAfter time.Time, jitter float64) time.Time {
	life := notAfter.Sub(notBefore)
	return notBefore.Add(time.Duration(float64(life) * (0.7 + 0.2*jitter)))
}

// Satisfies reports whether a certificate is what template asks for: the
// same subject common name and organizations, and (for a serving
// certificate) the same SANs. A certificate that no longer matches (a node
// address changed) is replaced at once.
func Satisfies(c *x509.Certificate, template *x509.CertificateRequest) bool {
	if template == nil {
		return true
	}
	if c.Subject.CommonName != template.Subject.CommonName ||
		!sameSet(c.Subject.Organization, template.Subject.Organization) ||
		!sameSet(c.DNSNames, template.DNSNames) {
		return false
	}
	return sameSet(ipStrings(c.IPAddresses), ipStrings(template.IPAddresses))
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// manager holds one kind of certificate (client or serving): it loads the
// current pair, requests a new one when there is none, it no longer fits
// the template or its rotation deadline passed, and stores it.
type manager struct {
	name     string // "client" or "serving", for logs
	store    FileStore
	template func() *x509.CertificateRequest
	signer   string
	usages   []certificatesv1.KeyUsage
	// client returns the API client for CSRs, given the current pair (nil
	// before the first): a node renews with its own identity.
	client func(current *tls.Certificate) (CSRClient, error)
	// rotate: keep renewing; otherwise stop once there is a certificate.
	rotate bool

	current atomic.Pointer[tls.Certificate]
	// healthy: the API server answered the last request (even with an
	// error status), as upstream's ServerHealthy.
	healthy atomic.Bool
}

// certificateWaitTimeout bounds the wait for one CSR, as upstream: then a
// fresh CSR is made.
const certificateWaitTimeout = 15 * time.Minute

// Current is the current pair, nil before the first was issued.
func (m *manager) Current() *tls.Certificate { return m.current.Load() }

// load takes the stored pair, if any and not expired, as current. An
// expired one is no identity to renew with: the next one is requested with
// the bootstrap credential, as upstream.
func (m *manager) load(now time.Time) {
	c, err := m.store.Current()
	if err != nil {
		klog.V(2).InfoS("No stored certificate", "kind", m.name, "err", err)
		return
	}
	if c.Leaf == nil || !now.Before(c.Leaf.NotAfter) {
		klog.InfoS("Stored certificate expired: requesting a new one", "kind", m.name, "file", m.store.CurrentPath())
		return
	}
	m.current.Store(c)
}

// deadline is when the current pair is to be renewed: now when there is
// none or it does not fit the template.
func (m *manager) deadline(now time.Time) time.Time {
	c := m.Current()
	if c == nil || c.Leaf == nil || !Satisfies(c.Leaf, m.template()) {
		return now
	}
	return RotationDeadline(c.Leaf.NotBefore, c.Leaf.NotAfter, rand.Float64())
}

// run renews the certificate until ctx ends (or, without rotate, until
// there is one).
func (m *manager) run(ctx context.Context) {
	backoff := wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 32 * time.Second}
	for {
		if c := m.Current(); c != nil && !m.rotate {
			return
		}
		deadline := m.deadline(time.Now())
		if m.Current() != nil {
			klog.V(2).InfoS("Waiting for the next certificate rotation", "kind", m.name, "deadline", deadline)
		}
		if !sleepUntil(ctx, deadline, m.templateChanged) {
			return
		}
		tmpl := m.template()
		if tmpl == nil { // nothing to ask for yet (no address)
			if !sleepFor(ctx, time.Second) {
				return
			}
			continue
		}
		if err := m.renew(ctx, tmpl); err != nil {
			if ctx.Err() != nil {
				return
			}
			delay := backoff.Step()
			klog.ErrorS(err, "Certificate request failed, will retry", "kind", m.name, "in", delay)
			metrics.ObserveCertificateRenewError(m.name)
			if !sleepFor(ctx, delay) {
				return
			}
			continue
		}
		backoff = wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 32 * time.Second}
	}
}

// templateChanged reports whether the current pair no longer fits.
func (m *manager) templateChanged() bool {
	c := m.Current()
	return c != nil && c.Leaf != nil && !Satisfies(c.Leaf, m.template())
}

func (m *manager) renew(ctx context.Context, tmpl *x509.CertificateRequest) error {
	client, err := m.client(m.Current())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, certificateWaitTimeout)
	defer cancel()
	certPEM, keyPEM, err := obtain(ctx, client, request{template: tmpl, signer: m.signer, usages: m.usages})
	var status apierrors.APIStatus
	m.healthy.Store(err == nil || errors.As(err, &status))
	if err != nil {
		return err
	}
	c, err := m.store.Update(certPEM, keyPEM, time.Now())
	if err != nil {
		return err
	}
	m.current.Store(c)
	klog.InfoS("Certificate stored", "kind", m.name, "file", m.store.CurrentPath(), "notAfter", c.Leaf.NotAfter)
	return nil
}

// sleepUntil waits until t, returning early (true) when changed reports
// true (checked each second), false when ctx ended.
func sleepUntil(ctx context.Context, t time.Time, changed func() bool) bool {
	for {
		d := time.Until(t)
		if d <= 0 {
			return ctx.Err() == nil
		}
		if !sleepFor(ctx, min(d, time.Second)) {
			return false
		}
		if changed() {
			return true
		}
	}
}

func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
