//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/volumes"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// restConfig loads kubeconfig, failing the test if it cannot.
func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func kubeClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(restConfig(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nodeletClient is nodelet's own API client (pkg/kube) for kubeconfig: what
// the product uses, against the real API server.
func nodeletClient(t *testing.T, kubeconfig string) kube.Interface {
	t.Helper()
	c, err := kube.NewForConfig(restConfig(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiAccessVolume returns the name of the kube-api-access-* volume the
// ServiceAccount admission plugin added to pod.
func apiAccessVolume(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			return v.Name
		}
	}
	t.Fatalf("pod %s has no kube-api-access volume: %+v", pod.Name, pod.Spec.Volumes)
	return ""
}

// TestProjectedVolumeProviderAsNode runs the volume provider with the node's
// credentials against a real API server (Node authorizer + NodeRestriction):
// it makes the kube-api-access volume of a pod bound to the node, the token
// authenticates, and what belongs to other nodes' pods is refused.
func TestProjectedVolumeProviderAsNode(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	admin := kubeClient(t, cluster.AdminKubeconfig)
	node := nodeletClient(t, cluster.NodeKubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	secret := func(name string) *v1.Secret {
		return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Data: map[string][]byte{"user": []byte("alice-" + name)}}
	}
	for _, s := range []*v1.Secret{secret("mine"), secret("theirs")} {
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secretVolume := func(name string) v1.Volume {
		return v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
			Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: name},
				Items:                []v1.KeyToPath{{Key: "user", Path: "creds/user", Mode: ptr.To[int32](0o400)}},
			}}},
		}}}
	}
	newPod := func(name, nodeName, secretName string, automount bool) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{
				NodeName:                     nodeName,
				AutomountServiceAccountToken: ptr.To(automount),
				Containers:                   []v1.Container{{Name: "c", Image: "busybox:1.35", Command: []string{"sleep", "3600"}}},
				Volumes:                      []v1.Volume{secretVolume(secretName)},
			},
		}
		created, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		return created
	}
	mine := newPod("sa-reader", framework.NodeName, "mine", true)
	theirsToken := newPod("other-token", "other-node", "mine", true)
	theirsSecret := newPod("other-secret", "other-node", "theirs", false)

	root := t.TempDir()
	// The provider mounts a tmpfs per volume.
	t.Cleanup(func() {
		if err := framework.UnmountAll(root); err != nil {
			t.Error(err)
		}
	})
	p, err := volumes.NewProvider(volumes.Options{Client: node, RootDir: root})
	if err != nil {
		t.Fatal(err)
	}
	// The Node authorizer learns of new pods through a watch: retry a
	// little while it catches up.
	poll.Within(t, 30*time.Second, "Prepare of a pod bound to this node", func() (bool, string) {
		if err := p.Prepare(ctx, mine); err != nil {
			return false, err.Error()
		}
		return true, ""
	})

	dir := layout.VolumeDir(root, mine.UID, layout.PluginProjected, apiAccessVolume(t, mine))
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return b
	}
	token := strings.TrimSpace(string(read(dir, "token")))
	ca := read(dir, "ca.crt")
	if want, _ := os.ReadFile(cluster.CAFile); !bytes.Equal(ca, want) {
		t.Errorf("ca.crt differs from the cluster CA")
	}
	if ns := string(read(dir, "namespace")); ns != "default" {
		t.Errorf("namespace = %q", ns)
	}
	if fi, err := os.Stat(filepath.Join(dir, "token")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("token mode = %v, %v; want 0644 (defaultMode 420)", fi.Mode(), err)
	}
	credsDir := layout.VolumeDir(root, mine.UID, layout.PluginProjected, "creds")
	if got := string(read(credsDir, "creds/user")); got != "alice-mine" {
		t.Errorf("secret file = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(credsDir, "creds/user")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("secret file mode = %v, %v; want 0400", fi.Mode(), err)
	}

	// The token is the default service account's, bound to the pod.
	review, err := admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := review.Status
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:default" {
		t.Fatalf("token review: %+v", st)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(mine.UID) {
		t.Errorf("token not bound to the pod: extra %v", st.User.Extra)
	}
	// And it works as a pod would use it: bearer token, server verified
	// with ca.crt.
	podClient, err := kubernetes.NewForConfig(&rest.Config{
		Host: cluster.Server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca},
	})
	if err != nil {
		t.Fatal(err)
	}
	self, err := podClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || self.Status.UserInfo.Username != "system:serviceaccount:default:default" {
		t.Fatalf("SelfSubjectReview with the projected token: %v %+v", err, self)
	}

	// Node restrictions: no token for a pod of another node
	// (NodeRestriction), no secret only another node's pod references
	// (Node authorizer).
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{theirsToken, "serviceaccounts"},
		{theirsSecret, `secrets "theirs" is forbidden`},
	} {
		err := p.Prepare(ctx, tc.pod)
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Prepare of %s (bound to another node) = %v, want forbidden (%s)", tc.pod.Name, err, tc.want)
		}
		t.Logf("%s refused: %v", tc.pod.Name, err)
	}
	t.Logf("token for %s: %d bytes; other nodes' pods refused", mine.Name, len(token))
}

// apicheckSource is a program run in a pod: it reads the service-account
// volume the way client libraries do and calls the API server with the
// token, verifying the server with ca.crt. Busybox's wget cannot: its TLS
// fails the handshake with the API server and verifies no certificate.
const apicheckSource = `package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

const dir = "` + saDir + `"

func main() {
	token, err1 := os.ReadFile(filepath.Join(dir, "token"))
	ca, err2 := os.ReadFile(filepath.Join(dir, "ca.crt"))
	ns, err3 := os.ReadFile(filepath.Join(dir, "namespace"))
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			fmt.Println("FAIL read:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("namespace=%s\n", ns)
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err == nil {
		fmt.Println("FAIL volume is writable")
		os.Exit(1)
	} else {
		fmt.Println("readonly:", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		fmt.Println("FAIL ca.crt holds no certificate")
		os.Exit(1)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body := []byte(` + "`" + `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}` + "`" + `)
	req, _ := http.NewRequest("POST", os.Getenv("API_SERVER")+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println("FAIL call:", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var review struct {
		Status struct {
			UserInfo struct{ Username string } ` + "`" + `json:"userInfo"` + "`" + `
		}
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(out, &review) != nil {
		fmt.Printf("FAIL %s: %s\n", resp.Status, out)
		os.Exit(1)
	}
	fmt.Printf("user=%s\n", review.Status.UserInfo.Username)
}
`

// buildAPICheckImage builds apicheckSource statically and imports it as
// example.com/apicheck:1.
func buildAPICheckImage(t *testing.T, rt *framework.Runtime) string {
	t.Helper()
	src := t.TempDir()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	for name, content := range map[string]string{
		"main.go": apicheckSource,
		"go.mod":  "module apicheck\n\ngo 1.26\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(rootfs, "apicheck"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build apicheck: %v\n%s", err, out)
	}
	const image = "example.com/apicheck:1"
	if out, err := rt.MakeImage("--name", image, "--root", rootfs, "--cmd", `["/apicheck"]`); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	return image
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestServiceAccountVolumeInPod is the end-to-end check: a pod as
// kubectl creates it (default service account, automounted token) runs on
// nodelet, reads its token, CA and namespace from the read-only
// kube-api-access volume and calls the API server with the token.
func TestServiceAccountVolumeInPod(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	image := buildAPICheckImage(t, rt)
	n := framework.NewNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	n.Start()

	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sa-check
  namespace: default
spec:
  nodeName: %s
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: check
    image: %s
    imagePullPolicy: Never
    env:
    - name: API_SERVER
      value: %s
`, framework.NodeName, image, cluster.Server)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	uid, err := cluster.Kubectl("get", "pod", "sa-check", "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(criconfig.PodLogDir(n.LogDir, "default", "sa-check", types.UID(uid)), criconfig.ContainerLogPath("check", 0))
	var log string
	poll.Within(t, 90*time.Second, "a result in "+logFile, func() (bool, string) {
		b, _ := os.ReadFile(logFile)
		log = string(b)
		if strings.Contains(log, "user=") || strings.Contains(log, "FAIL") {
			return true, ""
		}
		out, _ := cluster.Kubectl("get", "pod", "sa-check", "-o", "yaml")
		return false, fmt.Sprintf("log so far:\n%s\npod:\n%s", log, out)
	})
	for _, want := range []string{"namespace=default", "readonly:", "read-only file system", "user=system:serviceaccount:default:default"} {
		if !strings.Contains(log, want) {
			t.Errorf("container output lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "FAIL") {
		t.Errorf("container failed:\n%s", log)
	}
	t.Logf("container output:\n%s", log)
}
