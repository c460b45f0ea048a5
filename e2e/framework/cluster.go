//go:build e2e

package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a control plane started by hack/cluster-up.sh for one test (or one package, when
// started from TestMain through a testing.TB of your own): etcd + kube-apiserver on 127.0.0.1,
// no controller-manager and no scheduler.
type Cluster struct {
	// StateDir holds the PKI, tokens, kubeconfigs and logs/ of this cluster.
	StateDir string
	// Server is the API server URL, https://127.0.0.1:PORT.
	Server string
	// AdminKubeconfig authenticates as user admin in group system:masters.
	AdminKubeconfig string
	// NodeKubeconfig authenticates as system:node:<NodeName> in group system:nodes, so the Node
	// authorizer and the NodeRestriction admission plugin apply to it as to a real kubelet.
	NodeKubeconfig string
	// BootstrapKubeconfig authenticates as system:bootstrap:nodelet in group system:bootstrappers,
	// as a kubeadm bootstrap token does; it may do nothing until a test binds it a role.
	BootstrapKubeconfig string
	// NodeName is the node the node credentials are for.
	NodeName string
	// CAFile is the cluster CA. The API server's kubelet client certificate (KubeletClientCert) is
	// signed by it: give it to the node agent as --client-ca-file for logs/exec/port-forward.
	CAFile string
	// CAKeyFile is the CA's private key, for tests that sign CSRs themselves.
	CAKeyFile         string
	KubeletClientCert string
	KubeletClientKey  string

	kubectl string
}

const (
	clusterUpTimeout    = 3 * time.Minute
	clusterBuildTimeout = 30 * time.Minute // a cold kube-apiserver build is ~6 min on 2 cores
	debianKubectl       = "/usr/bin/kubectl"
)

// ClusterOption changes how StartCluster starts the control plane.
type ClusterOption string

// VerifyKubeletServing makes the API server verify node agents' serving certificates with the cluster
// CA (--kubelet-certificate-authority), as on a cluster whose kubelets bootstrap them: logs, exec and
// port-forward then work only with a certificate the cluster issued.
const VerifyKubeletServing ClusterOption = "KUBELET_CERTIFICATE_AUTHORITY=1"

// StartCluster brings up a fresh cluster with credentials for nodeName ("" = hostname, lowercased)
// and stops it when the test ends. Missing binaries are built with hack/build-tools.sh (slow the
// first time: run `make tools` ahead, and give `go test` a -timeout that allows it). When the
// cluster cannot run here the test is skipped, or fails when CI=true.
func StartCluster(t testing.TB, nodeName string, opts ...ClusterOption) *Cluster {
	t.Helper()
	root := RepoRoot()
	bin := filepath.Join(root, "_output", "tools", "bin")
	if !clusterIsExec(filepath.Join(bin, "etcd")) || !clusterIsExec(filepath.Join(bin, "kube-apiserver")) {
		t.Logf("cluster: building etcd and kube-apiserver with hack/build-tools.sh (a cold build takes minutes)")
		out, err := clusterRun(clusterBuildTimeout, root, []string{"TOOLS=etcd kube-apiserver"},
			"bash", filepath.Join(root, "hack", "build-tools.sh"))
		if err != nil {
			RequireRealParts(t, "cluster tools", fmt.Errorf("hack/build-tools.sh: %w\n%s", err, out))
		}
	}
	kubectl, err := clusterKubectl(root)
	RequireRealParts(t, "kubectl", err)

	port, err := freePort()
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	state := t.TempDir()
	env := []string{"APISERVER_PORT=" + strconv.Itoa(port)}
	if nodeName != "" {
		env = append(env, "NODE_NAME="+nodeName)
	}
	for _, o := range opts {
		env = append(env, string(o))
	}
	// Registered before cluster-up runs, so a half-started cluster is stopped too. t.TempDir's own
	// cleanup was registered first and therefore runs after this one.
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"kube-apiserver", "etcd"} {
				t.Logf("cluster: last lines of %s.log:\n%s", name, clusterTail(filepath.Join(state, "logs", name+".log"), 20))
			}
		}
		if out, err := clusterRun(time.Minute, root, nil, "bash", filepath.Join(root, "hack", "cluster-down.sh"), state); err != nil {
			t.Errorf("cluster-down: %v\n%s", err, out)
		}
	})
	begin := time.Now()
	out, err := clusterRun(clusterUpTimeout, root, env, "bash", filepath.Join(root, "hack", "cluster-up.sh"), state)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 { // NODELET_EXIT_ENV: the machine lacks something
			RequireRealParts(t, "cluster", fmt.Errorf("hack/cluster-up.sh: %w\n%s", err, out))
		}
		t.Fatalf("cluster-up: %v\n%s", err, out)
	}
	vals, err := clusterReadEnv(filepath.Join(state, "cluster.env"))
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	c := &Cluster{
		StateDir:            state,
		Server:              vals["SERVER"],
		AdminKubeconfig:     vals["ADMIN_KUBECONFIG"],
		NodeKubeconfig:      vals["NODE_KUBECONFIG"],
		BootstrapKubeconfig: vals["BOOTSTRAP_KUBECONFIG"],
		CAKeyFile:           vals["CA_KEY_FILE"],
		NodeName:            vals["NODE_NAME"],
		CAFile:              vals["CA_FILE"],
		KubeletClientCert:   vals["KUBELET_CLIENT_CERT"],
		KubeletClientKey:    vals["KUBELET_CLIENT_KEY"],
		kubectl:             kubectl,
	}
	t.Logf("cluster: %s up in %s (state %s)", c.Server, time.Since(begin).Round(time.Millisecond), state)
	return c
}

// Kubectl runs kubectl with the admin kubeconfig and returns its stdout. On failure the error
// carries stderr.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	return c.KubectlInput("", args...)
}

// KubectlInput is Kubectl with stdin (for `apply -f -`).
func (c *Cluster) KubectlInput(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// EnsureNamespace creates namespace ns with what the absent controller-manager would add to it:
// the "default" ServiceAccount (without it pods are refused) and the kube-root-ca.crt ConfigMap
// (the projected kube-api-access-* volume of every pod needs it). cluster-up does this for
// "default".
func (c *Cluster) EnsureNamespace(ns string) error {
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return err
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-root-ca.crt, namespace: %[1]s}
data:
  ca.crt: %[2]q
`, ns, string(ca))
	_, err = c.KubectlInput(manifest, "apply", "-f", "-")
	return err
}

// clusterKubectl prefers $KUBECTL, then Debian's /usr/bin/kubectl, then builds a version-matched
// one from the tools module.
func clusterKubectl(root string) (string, error) {
	if k := os.Getenv("KUBECTL"); k != "" {
		return k, nil
	}
	if clusterIsExec(debianKubectl) {
		return debianKubectl, nil
	}
	out, err := clusterRun(clusterBuildTimeout, root, []string{"TOOLS=kubectl"}, "bash", filepath.Join(root, "hack", "build-tools.sh"))
	if err != nil {
		return "", fmt.Errorf("no %s and building kubectl failed: %v\n%s", debianKubectl, err, out)
	}
	return filepath.Join(root, "_output", "tools", "bin", "kubectl"), nil
}

func clusterRun(timeout time.Duration, dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func clusterReadEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vals[k] = v
		}
	}
	for _, k := range []string{"SERVER", "ADMIN_KUBECONFIG", "NODE_KUBECONFIG"} {
		if vals[k] == "" {
			return nil, fmt.Errorf("%s: no %s", path, k)
		}
	}
	return vals, sc.Err()
}

func clusterIsExec(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func clusterTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
