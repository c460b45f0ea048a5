package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// ServingConfig is what the serving certificate is requested with.
type ServingConfig struct {
	// CertDir is --cert-dir; the pairs are kubelet-server-<timestamp>.pem.
	CertDir  string
	NodeName string
	// Addresses returns the node's addresses, the certificate's SANs.
	Addresses func() []v1.NodeAddress
	// API is the client configuration the CSRs are made with (the node's
	// own credential).
	API *rest.Config
	// CanAsk reports whether API has a credential yet (nil: always). While
	// the client certificate is being bootstrapped a request would only be
	// refused and push the manager into its backoff.
	CanAsk func() bool
}

// Serving is the node API's serving certificate from the cluster
// (serverTLSBootstrap).
type Serving struct {
	manager *manager
	canAsk  func() bool
}

// NewServing prepares the kubernetes.io/kubelet-serving certificate, with
// the stored pair if there is one; Run requests and renews it.
func NewServing(cfg ServingConfig) *Serving {
	m := &manager{
		name:  "serving",
		store: FileStore{Dir: cfg.CertDir, Prefix: ServingPairPrefix},
		// A template that changes (new addresses) makes the manager request
		// a new certificate at once, as upstream's.
		template: func() *x509.CertificateRequest { return ServingTemplate(cfg.NodeName, cfg.Addresses()) },
		signer:   certificatesv1.KubeletServingSignerName,
		usages:   servingUsages,
		client:   func(*tls.Certificate) (CSRClient, error) { return NewCSRClient(cfg.API) },
		rotate:   true,
	}
	m.load(time.Now())
	return &Serving{manager: m, canAsk: cfg.CanAsk}
}

// GetCertificate is the node API's tls.Config.GetCertificate: the current
// serving certificate, or a failed handshake until one was issued (as
// upstream: no self-signed stand-in the operator did not ask for).
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.manager.Current(); c != nil {
		return c, nil
	}
	return nil, errNoServingCert
}

// Run requests and renews the serving certificate until ctx ends.
func (s *Serving) Run(ctx context.Context) error {
	if s.canAsk != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for !s.canAsk() {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
	s.manager.run(ctx)
	return nil
}
