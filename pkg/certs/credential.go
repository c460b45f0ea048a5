package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// errNoClientCert says a kubeconfig authenticates without a client
// certificate (a token, or nothing).
var errNoClientCert = errors.New("no client certificate")

// CertsUsable decides whether the client certificate chain of a kubeconfig
// can still be used at now: there is one, and none of its certificates has
// expired or is not valid yet. Upstream bootstraps anew in exactly these
// cases (it only checks expiry; a certificate not valid yet cannot
// authenticate either).
func CertsUsable(chain []*x509.Certificate, now time.Time) error {
	if len(chain) == 0 {
		return errNoClientCert
	}
	for _, c := range chain {
		if now.After(c.NotAfter) {
			return fmt.Errorf("client certificate %q expired at %s", c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
		}
		if now.Before(c.NotBefore) {
			return fmt.Errorf("client certificate %q is not valid before %s", c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// KubeconfigUsable reports why the kubeconfig at path cannot authenticate
// with a client certificate at now, or nil when it can. A missing file is
// fs.ErrNotExist; every other reason is a plain error meant for the log.
func KubeconfigUsable(path string, now time.Time) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return err
	}
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return fmt.Errorf("reading client certificate: %w", err)
		}
	}
	if len(data) == 0 {
		return errNoClientCert
	}
	chain, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return fmt.Errorf("parsing client certificate: %w", err)
	}
	return CertsUsable(chain, now)
}

// loadKubeconfig reads a kubeconfig into a client config, with its relative
// paths resolved against the file's directory.
func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
