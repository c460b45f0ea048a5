//go:build e2e

package framework

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Registry is a private image registry on loopback (Debian's docker-registry) that asks for a
// username and password (htpasswd, bcrypt) over TLS with a certificate made for the test. The
// runtime it was started for trusts that certificate through containerd's registry hosts directory
// (config_path in hack/containerd/config.toml.tmpl), so pulls need only the credentials.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of image references.
	Host string
	// CertDir holds ca.crt, the registry's self-signed certificate (skopeo's --dest-cert-dir).
	CertDir        string
	user, password string
	logFile        string
	certFile       string
}

// StartRegistry starts a registry for rt accepting user/password, and stops it and removes its
// trust from rt when the test ends. Missing packages (docker-registry, skopeo, apache2-utils) are an
// environment limit: skipped, or failed under CI=true.
func StartRegistry(t testing.TB, rt *Runtime, user, password string) *Registry {
	t.Helper()
	for _, cmd := range []string{"docker-registry", "skopeo", "htpasswd"} {
		if _, err := exec.LookPath(cmd); err != nil {
			RequireRealParts(t, "registry tools (docker-registry, skopeo, apache2-utils)", fmt.Errorf("%s: %w: %w", cmd, err, ErrUnsupported))
		}
	}
	dir := t.TempDir()
	port := FreePort(t)
	r := &Registry{Host: "127.0.0.1:" + strconv.Itoa(port), CertDir: filepath.Join(dir, "certs"),
		user: user, password: password, logFile: filepath.Join(dir, "registry.log")}
	if err := os.MkdirAll(r.CertDir, 0o700); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(r.CertDir, "ca.crt"), filepath.Join(dir, "registry.key")
	if err := writeSelfSigned(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	// bcrypt: the only hash docker-registry's htpasswd accepts.
	hash, err := exec.Command("htpasswd", "-Bbn", user, password).Output()
	if err != nil {
		t.Fatalf("htpasswd: %v", err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, bytes.TrimSpace(hash), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `version: 0.1
log: {level: info, formatter: text}
storage:
  filesystem: {rootdirectory: %s}
http:
  addr: %s
  secret: nodelet-e2e
  tls: {certificate: %s, key: %s}
auth:
  htpasswd: {realm: nodelet-e2e, path: %s}
`, filepath.Join(dir, "data"), r.Host, certFile, keyFile, htpasswd), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(r.logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker-registry", "serve", config)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start docker-registry: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(r.logFile)
			t.Logf("registry log (last lines):\n%s", runtimeLastLines(string(b), 20))
		}
	})

	r.certFile = certFile
	r.TrustAs(t, rt, r.Host)
	if err := r.waitReady(exited); err != nil {
		b, _ := os.ReadFile(r.logFile)
		t.Fatalf("registry: %v\n%s", err, runtimeLastLines(string(b), 20))
	}
	return r
}

// TrustAs makes rt reach host (the registry itself, or a proxy in front of it on loopback) over
// https with the registry's certificate, until the test ends. containerd reads
// <config_path>/<host>/hosts.toml at each pull; without one it talks plain http to a loopback registry.
func (r *Registry) TrustAs(t testing.TB, rt *Runtime, host string) {
	t.Helper()
	hostsDir := filepath.Join(rt.StateDir, "certs.d", host)
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostsDir) })
	// containerd 1.6 refuses a hosts.toml without a host table ("invalid `host` tree"); an empty
	// one leaves the server line as the only host.
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts.toml"), fmt.Appendf(nil,
		"server = %q\nca = %q\n\n[host]\n", "https://"+host, r.certFile), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the registry answers /v2/ (with 401: it wants credentials).
func (r *Registry) waitReady(exited <-chan struct{}) error {
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(r.CertDir, "ca.crt"))
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	var last string
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("docker-registry exited")
		default:
		}
		resp, err := client.Get("https://" + r.Host + "/v2/")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusUnauthorized, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("no 401 from https://%s/v2/ within 30s (last: %s)", r.Host, last)
	}
	return err
}

// Push copies a docker-archive tar (Runtime.BuildImage) into the registry as ref, a reference
// on r.Host, with the registry's credentials.
func (r *Registry) Push(archive, ref string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --insecure-policy: no signature policy applies to a test image going into a test registry.
	out, err := exec.CommandContext(ctx, "skopeo", "--insecure-policy", "copy", "--quiet",
		"--dest-creds", r.user+":"+r.password, "--dest-cert-dir", r.CertDir,
		"docker-archive:"+archive, "docker://"+ref).CombinedOutput()
	if err != nil {
		return fmt.Errorf("skopeo copy to %s: %w\n%s", ref, err, out)
	}
	return nil
}

// writeSelfSigned writes a certificate for 127.0.0.1 that is its own CA, and its key.
func writeSelfSigned(certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "nodelet e2e registry"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
