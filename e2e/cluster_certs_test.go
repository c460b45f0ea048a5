//go:build e2e

package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// certLifetime is what the test's signer gives every certificate: short, so
// that nodelet rotates within the test (at 70-90 % of it).
const certLifetime = 2 * time.Minute

// TestClusterTLSBootstrap starts nodelet with only a bootstrap kubeconfig
// (a token in group system:bootstrappers, as kubeadm join's), rotation of
// the client and serving certificates on, and a signer (this test) that
// approves and issues 2-minute certificates. nodelet must request its client
// certificate, write the kubeconfig and kubelet-client-current.pem, register
// and run a pod; serve :port with the issued serving certificate; and
// rotate the client certificate twice while the pod keeps running, its
// Lease keeps being renewed past the old certificates' expiry and new pods
// still start; and the API server, verifying node agents with the cluster
// CA, reads a container's logs through the node API before and after the
// serving certificate's rotation. Per rotation it measures what became of
// nodelet's watches and checks that a pod's status changes keep reaching the
// API (rotationTraffic).
func TestClusterTLSBootstrap(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName, framework.VerifyKubeletServing)
	if cluster.BootstrapKubeconfig == "" || cluster.CAKeyFile == "" {
		t.Fatal("cluster-up wrote no bootstrap kubeconfig or CA key")
	}
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// What kubeadm sets up for join: bootstrappers may create CSRs.
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-node-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:bootstrappers"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	signer := newTestSigner(t, cluster.CAFile, cluster.CAKeyFile)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); signer.run(ctx, t, admin) }()
	defer wg.Wait()
	defer cancel()

	kubeconfig := filepath.Join(t.TempDir(), "kubelet.conf")
	n := framework.StartNodelet(t, rt, "--kubeconfig", kubeconfig, "--bootstrap-kubeconfig", cluster.BootstrapKubeconfig,
		"--rotate-certificates", "--rotate-server-certificates", "--client-ca-file", cluster.CAFile,
		// The API server reaches the node API on loopback (see docs/CLUSTER.md).
		"--node-ip", "127.0.0.1")
	cpWaitNode(t, admin)
	certDir := filepath.Join(n.RootDir, "pki")
	current := filepath.Join(certDir, "kubelet-client-current.pem")

	// The kubeconfig as upstream writes it: the pair by its symlink.
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("bootstrapped kubeconfig: %v", err)
	}
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	if auth.ClientCertificate != current || auth.ClientKey != current || auth.Token != "" {
		t.Errorf("kubeconfig credential: cert %q key %q token set %v, want both %s", auth.ClientCertificate, auth.ClientKey, auth.Token != "", current)
	}
	first := readPair(t, current)
	if first.Subject.CommonName != "system:node:"+framework.NodeName || strings.Join(first.Subject.Organization, ",") != "system:nodes" {
		t.Errorf("client certificate subject %v", first.Subject)
	}
	if k, ok := first.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("client certificate key %T, want ECDSA P-256 as upstream", first.PublicKey)
	}

	if out, err := cluster.KubectlInput(cpPodYAML("steady", "echo hello from steady; while true; do sleep 1; done", 1), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	steady := cpWaitPod(t, admin, "steady", 90*time.Second, "Running", cpRunningInAPI)
	steadyID := steady.Status.ContainerStatuses[0].ContainerID

	// The node API presents the issued serving certificate.
	var served *x509.Certificate
	poll.Until(t, 90*time.Second, 500*time.Millisecond, "the node API to serve the issued certificate", func() (bool, string) {
		c, err := servedCert(n.APIPort, cluster.CAFile)
		served = c
		return err == nil, fmt.Sprint(err)
	})
	if served.Subject.CommonName != "system:node:"+framework.NodeName || served.Issuer.CommonName != "nodelet-test-ca" {
		t.Errorf("served certificate subject %v issuer %v", served.Subject, served.Issuer)
	}
	if _, err := os.Stat(filepath.Join(certDir, "kubelet-server-current.pem")); err != nil {
		t.Errorf("serving pair: %v", err)
	}
	// The API server verifies that certificate with the cluster CA.
	checkLogs := func(when string) {
		t.Helper()
		if out, err := cluster.Kubectl("logs", "steady"); err != nil || !strings.Contains(out, "hello from steady") {
			t.Errorf("kubectl logs %s: %q, %v", when, out, err)
		}
	}
	checkLogs("with the first serving certificate")

	// A pod whose status keeps changing, followed in the API across the rotations
	// (cluster_certs_watch_test.go).
	flips := startToggler(ctx, t, cluster, admin, &wg)

	prev := first
	for round := 1; round <= 2; round++ {
		traffic, err := readAPITraffic(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		var next *x509.Certificate
		poll.Until(t, certLifetime+30*time.Second, time.Second, fmt.Sprintf("client certificate rotation %d", round), func() (bool, string) {
			next = readPair(t, current)
			return next.SerialNumber.Cmp(prev.SerialNumber) != 0, "serial " + prev.SerialNumber.String()
		})
		t.Logf("rotation %d: %s -> %s (old one expires %s)", round, prev.SerialNumber, next.SerialNumber, prev.NotAfter.Format(time.TimeOnly))
		// Past the old certificate's end only the new one authenticates:
		// a renewed Lease and a pod started now show nodelet uses it.
		poll.Until(t, certLifetime, time.Second, "Lease renewed after the old client certificate expired", func() (bool, string) {
			l, err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, framework.NodeName, metav1.GetOptions{})
			if err != nil || l.Spec.RenewTime == nil {
				return false, fmt.Sprint(err)
			}
			return l.Spec.RenewTime.After(prev.NotAfter), "renewed " + l.Spec.RenewTime.Format(time.TimeOnly)
		})
		name := "after-rotation-" + strconv.Itoa(round)
		if out, err := cluster.KubectlInput(cpPodYAML(name, "while true; do sleep 1; done", 1), "apply", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		cpWaitPod(t, admin, name, 90*time.Second, "Running", cpRunningInAPI)
		p := cpWaitPod(t, admin, "steady", 10*time.Second, "still Running", cpRunningInAPI)
		if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != steadyID || cs.RestartCount != 0 {
			t.Errorf("steady pod's container changed: %s (restarts %d), was %s", cs.ContainerID, cs.RestartCount, steadyID)
		}
		rotationTraffic(ctx, t, admin, n, flips, round, next, traffic)
		prev = next
	}

	// The serving certificate was rotated too (same lifetime), and the
	// pairs are kept as upstream's store keeps them.
	if c, err := servedCert(n.APIPort, cluster.CAFile); err != nil {
		t.Errorf("serving certificate after rotations: %v", err)
	} else if c.SerialNumber.Cmp(served.SerialNumber) == 0 {
		t.Errorf("serving certificate not rotated: serial %v since %s", c.SerialNumber, served.NotBefore.Format(time.TimeOnly))
	}
	checkLogs("after the serving certificate's rotation")
	pairs, _ := filepath.Glob(filepath.Join(certDir, "kubelet-client-2*.pem"))
	if len(pairs) < 3 {
		t.Errorf("client pairs in %s: %v, want the bootstrapped one and two rotations", certDir, pairs)
	}
	client, server := signer.counts()
	t.Logf("signed %d client and %d serving certificates", client, server)
	if !strings.Contains(n.Log(), "Client certificate changed") {
		t.Errorf("nodelet did not log the certificate change")
	}
}

// readPair parses the certificate of a key-and-certificate PEM file.
func readPair(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	certs, err := certutil.ParseCertsPEM(pemBlocks(data, "CERTIFICATE"))
	if err != nil || len(certs) == 0 {
		t.Fatalf("%s: no certificate: %v", path, err)
	}
	if _, err := keyutil.ParsePrivateKeyPEM(data); err != nil {
		t.Fatalf("%s: no private key: %v", path, err)
	}
	return certs[0]
}

func pemBlocks(data []byte, typ string) []byte {
	var out []byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type == typ {
			out = append(out, pem.EncodeToMemory(b)...)
		}
	}
}

// servedCert dials the node API on loopback and verifies what it presents
// against the cluster CA for the node's name.
func servedCert(port int, caFile string) (*x509.Certificate, error) {
	pool, err := certutil.NewPool(caFile)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		&tls.Config{RootCAs: pool, ServerName: framework.NodeName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// testSigner approves and signs the node's CSRs with the cluster CA, as
// kube-controller-manager's csrapproving and csrsigning controllers would,
// with certLifetime.
type testSigner struct {
	ca  *x509.Certificate
	key crypto.Signer

	mu             sync.Mutex
	client, server int
}

func newTestSigner(t *testing.T, caFile, keyFile string) *testSigner {
	cas, err := certutil.CertsFromFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigner{ca: cas[0], key: k.(crypto.Signer)}
}

func (s *testSigner) counts() (client, server int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client, s.server
}

func (s *testSigner) run(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	csrs := c.CertificatesV1().CertificateSigningRequests()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, err := csrs.List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			csr := &list.Items[i]
			if len(csr.Status.Certificate) > 0 {
				continue
			}
			if err := s.issue(ctx, csrs, csr); err != nil && ctx.Err() == nil {
				t.Logf("signer: %s: %v", csr.Name, err)
			}
		}
	}
}

type csrClient interface {
	UpdateApproval(ctx context.Context, name string, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error)
	UpdateStatus(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error)
}

func (s *testSigner) issue(ctx context.Context, csrs csrClient, csr *certificatesv1.CertificateSigningRequest) error {
	var usage x509.ExtKeyUsage
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		usage = x509.ExtKeyUsageClientAuth
	case certificatesv1.KubeletServingSignerName:
		usage = x509.ExtKeyUsageServerAuth
	default:
		return nil
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		approved = approved || c.Type == certificatesv1.CertificateApproved
	}
	if !approved {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "E2ETest", Message: "approved by the e2e test",
		})
		var err error
		if csr, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("approve: %w", err)
		}
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return fmt.Errorf("request is not PEM")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	if err := req.CheckSignature(); err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    now.Add(-time.Second),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, req.PublicKey, s.key)
	if err != nil {
		return err
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("issue: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if usage == x509.ExtKeyUsageClientAuth {
		s.client++
	} else {
		s.server++
	}
	return nil
}
