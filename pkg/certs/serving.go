package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
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
	// refused and push the manager into its long backoff.
	CanAsk func() bool
}

// Serving is the node API's serving certificate from the cluster
// (serverTLSBootstrap).
type Serving struct {
	manager certificate.Manager
	canAsk  func() bool
}

// NewServing prepares the kubernetes.io/kubelet-serving certificate; Run
// requests and renews it.
func NewServing(ctx context.Context, cfg ServingConfig) (*Serving, error) {
	store, err := certificate.NewFileStoreWithLogger(klog.FromContext(ctx), ServingPairPrefix, cfg.CertDir, cfg.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in %s: %w", cfg.CertDir, err)
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (clientset.Interface, error) { return csrClientFor(cfg.API) },
		// A template that changes (new addresses) makes the manager request
		// a new certificate, as upstream's.
		GetTemplate:      func() *x509.CertificateRequest { return ServingTemplate(cfg.NodeName, cfg.Addresses()) },
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
		Name:             "server",
		Ctx:              &ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	return &Serving{manager: m, canAsk: cfg.CanAsk}, nil
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
	s.manager.Start()
	<-ctx.Done()
	s.manager.Stop()
	return nil
}
