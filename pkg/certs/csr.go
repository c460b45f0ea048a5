package certs

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// CSRClient is the part of the certificates.k8s.io/v1 API a request needs.
type CSRClient interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
}

// csrScheme knows only the certificates API: linking client-go's clientset
// (every API group, all registered at start-up) for it would double
// nodelet's memory, see docs/BENCHMARKS.md.
var (
	csrScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		if err := certificatesv1.AddToScheme(s); err != nil {
			panic(err) // a static registration cannot fail
		}
		metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
		return s
	}()
	csrCodecs = serializer.NewCodecFactory(csrScheme)
)

// NewCSRClient is a certificates.k8s.io/v1 CertificateSigningRequest
// client over cfg.
func NewCSRClient(cfg *rest.Config) (CSRClient, error) {
	c := rest.CopyConfig(cfg)
	gv := certificatesv1.SchemeGroupVersion
	c.GroupVersion, c.APIPath = &gv, "/apis"
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(csrScheme, csrCodecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("certificates API client: %w", err)
	}
	return gentype.NewClient("certificatesigningrequests", rc, runtime.NewParameterCodec(csrScheme), "",
		func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} }), nil
}

// request is one certificate to ask for.
type request struct {
	template *x509.CertificateRequest
	signer   string
	usages   []certificatesv1.KeyUsage
}

// Usages upstream asks for with an ECDSA key (no key encipherment: that is
// for RSA key exchange).
var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

// csrPollPeriod is how often a pending CSR is read again (a variable for
// the tests).
var csrPollPeriod = time.Second

// obtain makes a new ECDSA P-256 key (upstream's choice), asks for a
// certificate for it with a CSR and waits until the CSR is issued, denied
// or failed, or ctx ends. It returns the certificate and key PEM.
func obtain(ctx context.Context, client CSRClient, r request) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, r.template, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CSR: %w", err)
	}
	csr, err := client.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer,
			Usages:     r.usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("creating CSR: %w", err)
	}
	klog.InfoS("Certificate signing request created", "csr", csr.Name, "signer", r.signer)
	t := time.NewTicker(csrPollPeriod)
	defer t.Stop()
	for {
		done, err := csrOutcome(csr)
		if err != nil {
			return nil, nil, fmt.Errorf("CSR %s: %w", csr.Name, err)
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("waiting for CSR %s to be approved and issued: %w", csr.Name, context.Cause(ctx))
		case <-t.C:
		}
		name := csr.Name
		if csr, err = client.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil, nil, fmt.Errorf("reading CSR %s: %w", name, err)
		}
	}
	if err := matchesKey(csr.Status.Certificate, key.Public()); err != nil {
		return nil, nil, fmt.Errorf("CSR %s: %w", csr.Name, err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	klog.InfoS("Certificate signing request issued", "csr", csr.Name, "signer", r.signer)
	return csr.Status.Certificate, keyPEM, nil
}

// csrOutcome says whether a CSR is issued (true), still pending (false) or
// will never be (an error naming the condition).
func csrOutcome(csr *certificatesv1.CertificateSigningRequest) (bool, error) {
	for _, c := range csr.Status.Conditions {
		if c.Status != v1.ConditionTrue && c.Status != "" {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false, fmt.Errorf("%s: %s %s", c.Type, c.Reason, c.Message)
		}
	}
	return len(csr.Status.Certificate) > 0, nil
}

var errWrongKey = errors.New("issued certificate is not for the requested key")

// matchesKey checks the first certificate of an issued chain is for pub.
func matchesKey(chainPEM []byte, pub crypto.PublicKey) error {
	block, _ := pem.Decode(chainPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("issued certificate is not PEM")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("parsing issued certificate: %w", err)
	}
	if k, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(pub) {
		return errWrongKey
	}
	return nil
}
