package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
)

func TestClientTemplate(t *testing.T) {
	got := ClientTemplate("node-a")
	want := pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes"}}
	if !reflect.DeepEqual(got.Subject, want) || len(got.DNSNames) != 0 || len(got.IPAddresses) != 0 {
		t.Errorf("template %+v, want subject %+v and no SANs", got, want)
	}
}

func TestServingSANs(t *testing.T) {
	tests := []struct {
		name  string
		addrs []v1.NodeAddress
		dns   []string
		ips   []string
	}{
		{"none", nil, nil, nil},
		{"hostname and IP", NodeAddresses("node-a", []string{"10.0.0.5"}), []string{"node-a"}, []string{"10.0.0.5"}},
		{"dual stack, duplicates and junk", []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
			{Type: v1.NodeInternalIP, Address: "fd00::5"},
			{Type: v1.NodeExternalIP, Address: "10.0.0.5"},
			{Type: v1.NodeExternalIP, Address: "not-an-ip"},
			{Type: v1.NodeHostName, Address: "node-a"},
			{Type: v1.NodeInternalDNS, Address: "node-a.internal"},
			{Type: v1.NodeExternalDNS, Address: "node-a"},
			{Type: v1.NodeHostName, Address: ""},
		}, []string{"node-a", "node-a.internal"}, []string{"10.0.0.5", "fd00::5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dns, ips := ServingSANs(tc.addrs)
			var gotIPs []string
			for _, ip := range ips {
				gotIPs = append(gotIPs, ip.String())
			}
			if !reflect.DeepEqual(dns, tc.dns) || !reflect.DeepEqual(gotIPs, tc.ips) {
				t.Errorf("got %q %q, want %q %q", dns, gotIPs, tc.dns, tc.ips)
			}
		})
	}
}

func TestServingTemplate(t *testing.T) {
	if got := ServingTemplate("node-a", nil); got != nil {
		t.Errorf("no addresses: template %+v, want nil (wait)", got)
	}
	got := ServingTemplate("node-a", NodeAddresses("node-a", []string{"10.0.0.5"}))
	if got.Subject.CommonName != "system:node:node-a" || !reflect.DeepEqual(got.Subject.Organization, []string{"system:nodes"}) ||
		!reflect.DeepEqual(got.DNSNames, []string{"node-a"}) || len(got.IPAddresses) != 1 || !got.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) {
		t.Errorf("template %+v", got)
	}
}

func TestDecide(t *testing.T) {
	unusable := errors.New("expired")
	tests := []struct {
		name              string
		bootstrap, rotate bool
		kubeconfigErr     error
		want              Plan
	}{
		{"plain kubeconfig", false, false, nil, Plan{}},
		{"plain kubeconfig, unusable: used anyway (no way to get another)", false, false, unusable, Plan{}},
		{"bootstrap given, kubeconfig usable", true, false, nil, Plan{}},
		{"bootstrap given, kubeconfig missing", true, false, fs.ErrNotExist, Plan{Manage: true, Bootstrap: true}},
		{"bootstrap given, kubeconfig expired", true, false, unusable, Plan{Manage: true, Bootstrap: true}},
		{"rotation of a usable kubeconfig", false, true, nil, Plan{Manage: true}},
		{"rotation, bootstrap not needed", true, true, nil, Plan{Manage: true}},
		{"rotation and bootstrap", true, true, unusable, Plan{Manage: true, Bootstrap: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.bootstrap, tc.rotate, tc.kubeconfigErr); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// testCert makes a self-signed certificate valid from notBefore to notAfter
// and returns it with its PEM forms.
func testCert(t *testing.T, notBefore, notAfter time.Time) (*x509.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:node-a"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return c, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM
}

func TestCertsUsable(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	valid, _, _ := testCert(t, now.Add(-time.Hour), now.Add(time.Hour))
	expired, _, _ := testCert(t, now.Add(-2*time.Hour), now.Add(-time.Hour))
	future, _, _ := testCert(t, now.Add(time.Hour), now.Add(2*time.Hour))
	tests := []struct {
		name  string
		chain []*x509.Certificate
		want  string // "" = usable
	}{
		{"none", nil, "no client certificate"},
		{"valid", []*x509.Certificate{valid}, ""},
		{"expired", []*x509.Certificate{expired}, "expired"},
		{"expired in the chain", []*x509.Certificate{valid, expired}, "expired"},
		{"not yet valid", []*x509.Certificate{future}, "not valid before"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CertsUsable(tc.chain, now)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func writeKubeconfigFile(t *testing.T, path string, auth string) {
	t.Helper()
	body := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:6443}\n" +
		"users:\n- name: u\n  user: {" + auth + "}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestKubeconfigUsable(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	_, validPEM, keyPEM := testCert(t, now.Add(-time.Hour), now.Add(time.Hour))
	_, expiredPEM, _ := testCert(t, now.Add(-2*time.Hour), now.Add(-time.Hour))
	pair := filepath.Join(dir, "kubelet-client-current.pem")
	if err := os.WriteFile(pair, append(append([]byte{}, validPEM...), keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return encodeBase64(b) }
	cases := map[string]struct {
		auth string // "" = no file
		want string
	}{
		"missing":              {"", "no such file"},
		"token only":           {"token: abc", "no client certificate"},
		"embedded valid":       {"client-certificate-data: " + b64(validPEM) + ", client-key-data: " + b64(keyPEM), ""},
		"embedded expired":     {"client-certificate-data: " + b64(expiredPEM) + ", client-key-data: " + b64(keyPEM), "expired"},
		"file, relative path":  {"client-certificate: kubelet-client-current.pem, client-key: kubelet-client-current.pem", ""},
		"file that is missing": {"client-certificate: gone.pem, client-key: gone.pem", "unable to read client-cert"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".conf")
			if tc.auth != "" {
				writeKubeconfigFile(t, path, tc.auth)
			}
			err := KubeconfigUsable(path, now)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	if err := KubeconfigUsable(filepath.Join(dir, "none"), now); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestBootstrappedKubeconfig(t *testing.T) {
	bootstrap := &rest.Config{Host: "https://10.0.0.1:6443", BearerToken: "abcdef.0123456789abcdef",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA"), ServerName: "kubernetes"}}
	got := BootstrappedKubeconfig(bootstrap, "/var/lib/kubelet/pki/kubelet-client-current.pem")
	ctx := got.Contexts[got.CurrentContext]
	cl, auth := got.Clusters[ctx.Cluster], got.AuthInfos[ctx.AuthInfo]
	if cl.Server != bootstrap.Host || string(cl.CertificateAuthorityData) != "CA" || cl.TLSServerName != "kubernetes" {
		t.Errorf("cluster %+v", cl)
	}
	if auth.ClientCertificate != "/var/lib/kubelet/pki/kubelet-client-current.pem" || auth.ClientKey != auth.ClientCertificate || auth.Token != "" {
		t.Errorf("credential %+v: want only the pair, no bootstrap token", auth)
	}
	// A CA file is referred to, not copied.
	bootstrap.CAFile = "/etc/kubernetes/pki/ca.crt"
	got = BootstrappedKubeconfig(bootstrap, "p")
	if cl := got.Clusters["default-cluster"]; cl.CertificateAuthority != bootstrap.CAFile || len(cl.CertificateAuthorityData) != 0 {
		t.Errorf("cluster with CA file %+v", cl)
	}
}

// NewClient with a missing kubeconfig and a bootstrap kubeconfig writes the
// kubeconfig pointing at the pair it is about to request, and gives clients
// no bootstrap token.
func TestNewClientBootstrapWritesKubeconfig(t *testing.T) {
	dir := t.TempDir()
	bootstrap := filepath.Join(dir, "bootstrap.conf")
	writeKubeconfigFile(t, bootstrap, "token: abcdef.0123456789abcdef")
	kubeconfig := filepath.Join(dir, "etc", "kubelet.conf")
	certDir := filepath.Join(dir, "pki")
	c, err := NewClient(ClientConfig{KubeconfigPath: kubeconfig, BootstrapKubeconfigPath: bootstrap, CertDir: certDir, NodeName: "node-a"})
	if err != nil || c == nil {
		t.Fatalf("NewClient: %v, %v", c, err)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	if want := filepath.Join(certDir, "kubelet-client-current.pem"); auth.ClientCertificate != want {
		t.Errorf("kubeconfig names %q, want %q", auth.ClientCertificate, want)
	}
	cfg := c.RESTConfig()
	if cfg.BearerToken != "" || cfg.Transport == nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Errorf("client config: token %q transport %v host %q", cfg.BearerToken, cfg.Transport, cfg.Host)
	}
	if c.Current() != nil {
		t.Errorf("a certificate before any was issued")
	}

	// Without rotation and with a usable kubeconfig, nothing is managed.
	c, err = NewClient(ClientConfig{KubeconfigPath: bootstrap, CertDir: certDir, NodeName: "node-a"})
	if err != nil || c != nil {
		t.Errorf("plain kubeconfig: %v, %v; want nil, nil", c, err)
	}
}

func TestServingFailsHandshakeUntilIssued(t *testing.T) {
	s := NewServing(ServingConfig{CertDir: t.TempDir(), NodeName: "node-a",
		Addresses: func() []v1.NodeAddress { return nil }, API: &rest.Config{Host: "https://127.0.0.1:1"}})
	if c, err := s.GetCertificate(nil); c != nil || err == nil || !strings.Contains(err.Error(), "kubelet-serving") {
		t.Errorf("GetCertificate = %v, %v; want an error naming the CSR", c, err)
	}
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// With rotation and a kubeconfig holding its own pair (kubeadm init's
// kubelet.conf), the pair is adopted into the store: kubelet-client-current.pem
// exists from the start and is what gets renewed.
func TestNewClientAdoptsKubeconfigPair(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	_, certPEM, keyPEM := testCert(t, now.Add(-time.Minute), now.Add(time.Hour))
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	writeKubeconfigFile(t, kubeconfig, "client-certificate-data: "+encodeBase64(certPEM)+", client-key-data: "+encodeBase64(keyPEM))
	c, err := NewClient(ClientConfig{KubeconfigPath: kubeconfig, CertDir: filepath.Join(dir, "pki"), NodeName: "node-a", Rotate: true})
	if err != nil || c == nil {
		t.Fatalf("NewClient: %v, %v", c, err)
	}
	if c.Current() == nil || c.Current().Leaf.Subject.CommonName != "system:node:node-a" {
		t.Errorf("current %v, want the kubeconfig's pair", c.Current())
	}
	if _, err := os.Stat(filepath.Join(dir, "pki", "kubelet-client-current.pem")); err != nil {
		t.Errorf("kubelet-client-current.pem: %v", err)
	}
}
