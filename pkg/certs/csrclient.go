package certs

import (
	"fmt"
	"net/http"

	clientset "k8s.io/client-go/kubernetes"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certificatesv1beta1 "k8s.io/client-go/kubernetes/typed/certificates/v1beta1"
	"k8s.io/client-go/rest"
)

// csrClient is the part of a clientset the certificate manager and
// k8s.io/client-go/util/certificate/csr use: the certificates API. Only
// these two groups are built, so the binary does not carry a client for
// every API group; any other method panics on the nil embedded interface,
// which is a programming error.
type csrClient struct {
	clientset.Interface
	v1      certificatesv1.CertificatesV1Interface
	v1beta1 certificatesv1beta1.CertificatesV1beta1Interface
}

func (c csrClient) CertificatesV1() certificatesv1.CertificatesV1Interface { return c.v1 }

func (c csrClient) CertificatesV1beta1() certificatesv1beta1.CertificatesV1beta1Interface {
	return c.v1beta1
}

func csrClientFor(cfg *rest.Config) (clientset.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("certificates API client: %w", err)
	}
	return newCSRClient(cfg, httpClient)
}

func newCSRClient(cfg *rest.Config, httpClient *http.Client) (clientset.Interface, error) {
	v1, err := certificatesv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("certificates/v1 client: %w", err)
	}
	v1beta1, err := certificatesv1beta1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("certificates/v1beta1 client: %w", err)
	}
	return csrClient{v1: v1, v1beta1: v1beta1}, nil
}
