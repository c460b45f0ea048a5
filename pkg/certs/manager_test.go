package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMain(m *testing.M) {
	csrPollPeriod = 10 * time.Millisecond
	os.Exit(m.Run())
}

func TestRotationDeadline(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(100 * time.Minute)
	for _, tc := range []struct {
		jitter float64
		want   time.Duration
	}{{0, 70 * time.Minute}, {0.5, 80 * time.Minute}, {0.75, 85 * time.Minute}} {
		if got := RotationDeadline(nb, na, tc.jitter).Sub(nb); got.Round(time.Millisecond) != tc.want.Round(time.Millisecond) {
			t.Errorf("jitter %v: deadline at %v, want %v", tc.jitter, got, tc.want)
		}
	}
}

func TestSatisfies(t *testing.T) {
	tmpl := ServingTemplate("node-a", NodeAddresses("node-a", []string{"10.0.0.5", "fd00::5"}))
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes"}},
		DNSNames: []string{"node-a"}, IPAddresses: []net.IP{net.ParseIP("fd00::5"), net.ParseIP("10.0.0.5")}}
	if !Satisfies(cert, tmpl) {
		t.Errorf("same subject and SANs (other order) must satisfy")
	}
	if !Satisfies(cert, nil) {
		t.Errorf("no template: anything satisfies")
	}
	moved := ServingTemplate("node-a", NodeAddresses("node-a", []string{"10.0.0.6"}))
	if Satisfies(cert, moved) {
		t.Errorf("a changed address must not satisfy")
	}
	if Satisfies(&x509.Certificate{Subject: pkix.Name{CommonName: "system:node:node-b", Organization: []string{"system:nodes"}}}, ClientTemplate("node-a")) {
		t.Errorf("another node's certificate must not satisfy")
	}
}

func TestFileStoreLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	s := FileStore{Dir: dir, Prefix: ClientPairPrefix}
	if _, err := s.Current(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty store: %v, want not exist", err)
	}
	now := time.Now()
	first := time.Date(2026, 12, 4, 15, 11, 54, 0, time.UTC)
	_, certPEM, keyPEM := testCert(t, now.Add(-time.Minute), now.Add(time.Hour))
	c, err := s.Update(certPEM, keyPEM, first)
	if err != nil || c.Leaf == nil {
		t.Fatalf("update: %v, %v", c, err)
	}
	pair := filepath.Join(dir, "kubelet-client-2026-12-04-15-11-54.pem")
	if target, err := os.Readlink(filepath.Join(dir, "kubelet-client-current.pem")); err != nil || target != pair {
		t.Errorf("current -> %q (%v), want %q", target, err, pair)
	}
	st, err := os.Stat(pair)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("pair file: %v, %v; want mode 0600", st, err)
	}
	if data, _ := os.ReadFile(pair); !strings.Contains(string(data), "CERTIFICATE") || !strings.Contains(string(data), "PRIVATE KEY") {
		t.Errorf("pair file holds %q, want certificate and key", data)
	}

	_, certPEM2, keyPEM2 := testCert(t, now.Add(-time.Minute), now.Add(2*time.Hour))
	if _, err := s.Update(certPEM2, keyPEM2, first.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	cur, err := s.Current()
	if err != nil || !cur.Leaf.NotAfter.Equal(now.Add(2*time.Hour).Truncate(time.Second)) {
		t.Errorf("current after the second update: %v, %v", cur, err)
	}
	if _, err := os.Stat(pair); err != nil {
		t.Errorf("older pair removed: %v (upstream keeps it)", err)
	}
	if _, err := s.Update(certPEM, keyPEM2, first); err == nil {
		t.Errorf("a certificate with another key's pair must be refused")
	}
}

// fakeCSRs is a CSR API whose signer answers each created CSR with outcome.
type fakeCSRs struct {
	mu      sync.Mutex
	created []*certificatesv1.CertificateSigningRequest
	outcome func(*certificatesv1.CertificateSigningRequest) // fills Status; nil leaves it pending
	err     error
}

func (f *fakeCSRs) Create(_ context.Context, csr *certificatesv1.CertificateSigningRequest, _ metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	csr = csr.DeepCopy()
	csr.Name = "csr-" + string(rune('a'+len(f.created)))
	f.created = append(f.created, csr)
	return csr.DeepCopy(), nil
}

func (f *fakeCSRs) Get(_ context.Context, name string, _ metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.created {
		if c.Name == name {
			if f.outcome != nil {
				f.outcome(c)
			}
			return c.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, name)
}

// signWith issues CSRs with a self-made CA for life.
func signWith(t *testing.T, life time.Duration) func(*certificatesv1.CertificateSigningRequest) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	return func(csr *certificatesv1.CertificateSigningRequest) {
		if len(csr.Status.Certificate) > 0 {
			return
		}
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Errorf("CSR: %v", err)
			return
		}
		now := time.Now()
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: req.Subject,
			DNSNames: req.DNSNames, IPAddresses: req.IPAddresses, NotBefore: now.Add(-time.Second), NotAfter: now.Add(life)}, ca, req.PublicKey, caKey)
		if err != nil {
			t.Errorf("sign: %v", err)
			return
		}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
}

func TestObtain(t *testing.T) {
	sign := signWith(t, time.Hour)
	api := &fakeCSRs{outcome: sign}
	certPEM, keyPEM, err := obtain(t.Context(), api, request{template: ClientTemplate("node-a"), signer: certificatesv1.KubeAPIServerClientKubeletSignerName, usages: clientUsages})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil || pair.Leaf.Subject.CommonName != "system:node:node-a" {
		t.Fatalf("pair: %v, %v", pair.Leaf, err)
	}
	if k, ok := pair.Leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", pair.Leaf.PublicKey)
	}
	csr := api.created[0]
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || len(csr.Spec.Usages) != 2 || csr.GenerateName != "csr-" {
		t.Errorf("CSR spec %+v", csr.Spec)
	}

	denied := &fakeCSRs{outcome: func(c *certificatesv1.CertificateSigningRequest) {
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: v1.ConditionTrue, Reason: "NotMine"}}
	}}
	if _, _, err := obtain(t.Context(), denied, request{template: ClientTemplate("node-a")}); err == nil || !strings.Contains(err.Error(), "Denied") {
		t.Errorf("denied CSR: %v", err)
	}

	// Issued for another key: refused.
	wrong := &fakeCSRs{outcome: func(c *certificatesv1.CertificateSigningRequest) {
		_, other, _ := testCert(t, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		c.Status.Certificate = other
	}}
	if _, _, err := obtain(t.Context(), wrong, request{template: ClientTemplate("node-a")}); !errors.Is(err, errWrongKey) {
		t.Errorf("certificate for another key: %v", err)
	}

	// Pending until the context ends.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := obtain(ctx, &fakeCSRs{}, request{template: ClientTemplate("node-a")}); err == nil || !strings.Contains(err.Error(), "waiting for CSR") {
		t.Errorf("pending CSR: %v", err)
	}
}

func TestManagerRequestsStoresAndStops(t *testing.T) {
	api := &fakeCSRs{outcome: signWith(t, time.Hour)}
	dir := t.TempDir()
	m := &manager{name: "client", store: FileStore{Dir: dir, Prefix: ClientPairPrefix},
		template: func() *x509.CertificateRequest { return ClientTemplate("node-a") },
		signer:   certificatesv1.KubeAPIServerClientKubeletSignerName, usages: clientUsages,
		client: func(*tls.Certificate) (CSRClient, error) { return api, nil }}
	m.load(time.Now())
	if m.Current() != nil {
		t.Fatal("certificate before any was issued")
	}
	// Without rotate, run returns once there is a certificate.
	m.run(t.Context())
	c := m.Current()
	if c == nil || c.Leaf.Subject.CommonName != "system:node:node-a" {
		t.Fatalf("current %v", c)
	}
	stored, err := m.store.Current()
	if err != nil || !stored.Leaf.Equal(c.Leaf) {
		t.Errorf("stored %v, %v", stored, err)
	}
	// A later start finds it; an expired one is not used.
	m2 := &manager{store: m.store}
	m2.load(time.Now())
	if m2.Current() == nil {
		t.Errorf("stored pair not loaded")
	}
	m3 := &manager{store: m.store}
	m3.load(time.Now().Add(2 * time.Hour))
	if m3.Current() != nil {
		t.Errorf("expired stored pair loaded")
	}
	if !m.healthy.Load() {
		t.Errorf("server not healthy after an issued CSR")
	}
}
