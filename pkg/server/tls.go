package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// SelfSigned says where and for whom to generate a serving certificate when
// none is configured, as upstream does into <root-dir>/pki.
type SelfSigned struct {
	// Dir holds kubelet.crt and kubelet.key.
	Dir string
	// Host is the certificate's main name (the node name).
	Host string
	// IPs and DNSNames are added as subject alternative names.
	IPs      []net.IP
	DNSNames []string
}

// renewBefore is how close to expiry a generated certificate is replaced at
// start-up. Configured certificates are never replaced: they are someone
// else's to rotate.
const renewBefore = 24 * time.Hour

// ServingCertificate loads certFile and keyFile (--tls-cert-file,
// --tls-private-key-file) or, when both are empty, the self-signed pair in
// self.Dir, generating it first if it is missing or about to expire.
func ServingCertificate(certFile, keyFile string, self SelfSigned) (tls.Certificate, error) {
	switch {
	case certFile != "" && keyFile != "":
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate %s / %s: %w", certFile, keyFile, err)
		}
		return c, nil
	case certFile != "" || keyFile != "":
		return tls.Certificate{}, errors.New("serving certificate: --tls-cert-file and --tls-private-key-file go together")
	}
	if self.Dir == "" || self.Host == "" {
		return tls.Certificate{}, errors.New("serving certificate: no certificate configured and no directory to generate one in")
	}
	certFile = filepath.Join(self.Dir, "kubelet.crt")
	keyFile = filepath.Join(self.Dir, "kubelet.key")
	if c, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil && !expiring(c) {
		return c, nil
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(self.Host, self.IPs, self.DNSNames)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating self-signed serving certificate: %w", err)
	}
	if err := os.MkdirAll(self.Dir, 0o700); err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate directory: %w", err)
	}
	// Key first: a crash in between leaves a pair that fails to load and is
	// generated again, never a certificate without its key.
	if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing %s: %w", keyFile, err)
	}
	if err := cert.WriteCert(certFile, certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("writing %s: %w", certFile, err)
	}
	klog.InfoS("Generated a self-signed serving certificate", "cert", certFile, "host", self.Host)
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generated serving certificate: %w", err)
	}
	return c, nil
}

func expiring(c tls.Certificate) bool {
	if len(c.Certificate) == 0 {
		return true
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return true
	}
	return time.Until(leaf.NotAfter) < renewBefore
}

// ClientCAPool reads --client-ca-file.
func ClientCAPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("client CA file %s: no PEM certificates", file)
	}
	return pool, nil
}

// TLSConfig is the node API's TLS configuration. Client certificates are
// requested (verified later by X509Authenticator) only when there is a CA to
// verify them against. Only HTTP/1.1 is offered: exec, attach and
// port-forward upgrade the connection, which HTTP/2 cannot do.
func TLSConfig(serving tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	cfg := &tls.Config{
		Certificates: []tls.Certificate{serving},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"},
		ClientAuth:   tls.NoClientCert,
	}
	if clientCAs != nil {
		cfg.ClientAuth = tls.RequestClientCert
		// Named in the handshake so clients with several certificates
		// pick one this CA signed.
		cfg.ClientCAs = clientCAs
	}
	return cfg
}
