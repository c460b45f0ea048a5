package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServingCertificateSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	self := SelfSigned{Dir: dir, Host: "node-a", IPs: []net.IP{net.ParseIP("10.0.0.5")}, DNSNames: []string{"localhost"}}
	c1, err := ServingCertificate("", "", self)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c1.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("node-a"); err != nil {
		t.Error(err)
	}
	if err := leaf.VerifyHostname("10.0.0.5"); err != nil {
		t.Error(err)
	}
	st, err := os.Stat(filepath.Join(dir, "kubelet.key"))
	if err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("key file: %v %v", st.Mode(), err)
	}

	// A restart reuses the pair: clients that pinned it keep working.
	c2, err := ServingCertificate("", "", self)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c1.Certificate[0], c2.Certificate[0]) {
		t.Error("self-signed certificate regenerated on the second start")
	}

	// A damaged pair is replaced.
	if err := os.WriteFile(filepath.Join(dir, "kubelet.crt"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	c3, err := ServingCertificate("", "", self)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(c1.Certificate[0], c3.Certificate[0]) {
		t.Error("damaged certificate not replaced")
	}
}

func TestServingCertificateConfigured(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	c := ca.issue(t, "node-a", nil, x509.ExtKeyUsageServerAuth)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	got, err := ServingCertificate(certFile, keyFile, SelfSigned{Dir: filepath.Join(dir, "pki"), Host: "x"})
	if err != nil || !bytes.Equal(got.Certificate[0], c.Certificate[0]) {
		t.Errorf("configured pair: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pki")); !os.IsNotExist(err) {
		t.Error("a self-signed pair was generated although one is configured")
	}
	for _, tc := range []struct{ cert, key, want string }{
		{certFile, "", "go together"},
		{"", keyFile, "go together"},
		{certFile, filepath.Join(dir, "missing"), "no such file"},
	} {
		if _, err := ServingCertificate(tc.cert, tc.key, SelfSigned{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.cert, tc.key, err, tc.want)
		}
	}
}

func TestClientCAPoolAndTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	file := filepath.Join(dir, "ca.crt")
	os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o644)
	pool, err := ClientCAPool(file)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bad"), []byte("nope"), 0o644)
	if _, err := ClientCAPool(filepath.Join(dir, "bad")); err == nil {
		t.Error("CA file without certificates accepted")
	}
	cfg := TLSConfig(tls.Certificate{}, pool)
	if cfg.ClientAuth != tls.RequestClientCert || cfg.MinVersion != tls.VersionTLS12 || strings.Join(cfg.NextProtos, ",") != "http/1.1" {
		t.Errorf("TLS config %+v", cfg)
	}
	if TLSConfig(tls.Certificate{}, nil).ClientAuth != tls.NoClientCert {
		t.Error("client certificates requested without a CA")
	}
}
