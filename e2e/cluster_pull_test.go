//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestClusterImagePullSecrets: images from a registry that wants a login
// (Debian's docker-registry on loopback, htpasswd over TLS), pulled by
// nodelet through containerd for API pods. Without credentials, and with a
// wrong password, the pull fails with ErrImagePull (then ImagePullBackOff)
// and the registry's 401 in the message; with a kubernetes.io/dockerconfigjson
// pull secret the pod runs; with a kubernetes.io/dockercfg secret named only
// by the pod's service account (the API server's ServiceAccount admission
// copies it into the pod) the pod runs too. The password appears in no event
// and no nodelet log line.
func TestClusterImagePullSecrets(t *testing.T) {
	const user, password = "e2e-puller", "Pull-Pa55-8d1f"
	rt := framework.StartRuntime(t)
	reg := framework.StartRegistry(t, rt, user, password)
	image := reg.Host + "/e2e/private:1"
	if err := pushBusybox(t, rt, reg, image); err != nil {
		t.Fatal(err)
	}

	cluster := framework.StartCluster(t, framework.NodeName)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	ctx := context.Background()
	core := admin.CoreV1()

	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	wrong := base64.StdEncoding.EncodeToString([]byte(user + ":not-the-password"))
	for _, s := range []*v1.Secret{{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.Host, auth)},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "regcfg"},
		Type:       v1.SecretTypeDockercfg,
		Data:       map[string][]byte{v1.DockerConfigKey: fmt.Appendf(nil, `{%q:{"username":%q,"password":%q}}`, "https://"+reg.Host+"/v2/", user, password)},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "badcred"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.Host, wrong)},
	}} {
		if _, err := core.Secrets("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := core.ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Name: "puller"},
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcfg"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	create := func(name, sa string, secrets ...string) *v1.Pod {
		t.Helper()
		p := pullPodSpec(name, image)
		p.Spec.ServiceAccountName = sa
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
		}
		created, err := core.Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = core.Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		return created
	}

	// Without credentials, and with a wrong password: refused by the registry.
	for _, tc := range []struct{ name, secret string }{{"pull-nosecret", ""}, {"pull-wrongpass", "badcred"}} {
		var secrets []string
		if tc.secret != "" {
			secrets = append(secrets, tc.secret)
		}
		create(tc.name, "", secrets...)
		p := cpWaitPod(t, admin, tc.name, 60*time.Second, "ErrImagePull", waitingReason("ErrImagePull"))
		if msg := framework.ContainerStatus(p, "app").State.Waiting.Message; !strings.Contains(msg, "401 Unauthorized") || !strings.Contains(msg, image) {
			t.Errorf("%s: ErrImagePull message lacks the registry's answer: %q", tc.name, msg)
		}
		cpWaitPod(t, admin, tc.name, 60*time.Second, "ImagePullBackOff", waitingReason("ImagePullBackOff"))
		if p.Status.Phase != v1.PodPending {
			t.Errorf("%s: phase %s, want Pending", tc.name, p.Status.Phase)
		}
	}

	// The pod's own dockerconfigjson secret.
	create("pull-secret", "", "regcred")
	cpWaitPod(t, admin, "pull-secret", 60*time.Second, "Running with the pulled image", framework.Running)

	// The service account's dockercfg secret, copied into the pod by the
	// API server's ServiceAccount admission (as upstream; the kubelet reads
	// only the pod's list).
	p := create("pull-sa", "puller")
	if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "regcfg" {
		t.Errorf("admission did not copy the service account's pull secrets: %v", p.Spec.ImagePullSecrets)
	}
	cpWaitPod(t, admin, "pull-sa", 60*time.Second, "Running with the pulled image", framework.Running)

	// Events: Pulling / Pulled with the duration; the refusals with the
	// registry's answer; the password nowhere.
	evs, err := core.Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	pulled := false
	for _, e := range evs.Items {
		fmt.Fprintf(&all, "%s %s %s: %s\n", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		if e.InvolvedObject.Name == "pull-secret" && e.Reason == "Pulled" && strings.HasPrefix(e.Message, fmt.Sprintf("Successfully pulled image %q in ", image)) {
			pulled = true
		}
	}
	if !pulled {
		t.Errorf("no Pulled event with the pull's duration for pull-secret:\n%s", all.String())
	}
	for _, leak := range []string{password, auth} {
		if strings.Contains(all.String(), leak) {
			t.Errorf("an event carries the registry password:\n%s", all.String())
		}
		if strings.Contains(n.Log(), leak) {
			t.Errorf("nodelet's log carries the registry password")
		}
	}
}

// waitingReason is a condition on the pod's "app" container waiting with reason.
func waitingReason(reason string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		if p == nil {
			return false
		}
		cs := framework.ContainerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == reason
	}
}

// pullPodSpec is an API pod on the e2e node (host network: no CNI needed)
// running image, pulled on every start.
func pullPodSpec(name, image string) *v1.Pod {
	grace := int64(1)
	automount := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      framework.NodeName,
			HostNetwork:                   true,
			AutomountServiceAccountToken:  &automount,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "app", Image: image, ImagePullPolicy: v1.PullAlways,
				Command: []string{"/bin/sleep", "3600"},
			}},
		},
	}
}

// pushBusybox builds a small busybox image (the host's static busybox, as
// the runtime's test image) and pushes it into the registry as ref.
func pushBusybox(t *testing.T, rt *framework.Runtime, reg *framework.Registry, ref string) error {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		return err
	}
	bin, err := filepath.EvalSymlinks("/bin/busybox")
	if err != nil {
		return fmt.Errorf("busybox-static: %w", err)
	}
	if err := copyFile(bin, filepath.Join(root, "bin", "busybox"), 0o755); err != nil {
		return err
	}
	archive := filepath.Join(dir, "image.tar")
	if _, err := rt.BuildImage(archive, "--name", ref, "--root", root, "--cmd", `["sh"]`,
		"--symlink", "/bin/sh=busybox", "--symlink", "/bin/sleep=busybox"); err != nil {
		return err
	}
	return reg.Push(archive, ref)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestClusterSlowPullCancelledWithPod: a pull that makes no progress (a
// proxy in front of the registry stops passing data after the first bytes
// of each connection) is not cut off by nodelet: the pod shows the Pulling
// event and, in the API, ContainerCreating; nodelet logs the pull as still
// going; and the pull is cancelled,
// its connections to the registry closed, only when the pod is deleted;
// the pod then goes away as any other.
func TestClusterSlowPullCancelledWithPod(t *testing.T) {
	const user, password = "e2e-slow", "Slow-Pa55-3c9e"
	rt := framework.StartRuntime(t)
	reg := framework.StartRegistry(t, rt, user, password)
	if err := pushBusybox(t, rt, reg, reg.Host+"/e2e/slow:1"); err != nil {
		t.Fatal(err)
	}
	proxy := startStallProxy(t, reg.Host, 16<<10)
	reg.TrustAs(t, rt, proxy.host)
	image := proxy.host + "/e2e/slow:1"

	cluster := framework.StartCluster(t, framework.NodeName)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	ctx := context.Background()
	core := admin.CoreV1()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if _, err := core.Secrets("default").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "slowcred"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, proxy.host, auth)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pullPodSpec("pull-slow", image)
	p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "slowcred"}}
	if _, err := core.Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = core.Pods("default").Delete(context.Background(), "pull-slow", metav1.DeleteOptions{}) })

	// The progress log comes every 30 s (podsync.DefaultPullProgressInterval).
	poll.Within(t, 90*time.Second, "nodelet logging the pull as still going", func() (bool, string) {
		for _, line := range strings.Split(n.Log(), "\n") {
			if strings.Contains(line, `"Still pulling image"`) && strings.Contains(line, `pod="default/pull-slow"`) {
				t.Logf("nodelet: %s", line)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d connections through the proxy, %d open", proxy.total.Load(), proxy.open.Load())
	})
	// Meanwhile the API shows the pod Pending, its container in
	// ContainerCreating, as upstream does during a pull.
	cpWaitPod(t, admin, "pull-slow", 10*time.Second, "Pending with ContainerCreating", func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodPending && waitingReason("ContainerCreating")(p)
	})
	evs, err := core.Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == "pull-slow" {
			reasons = append(reasons, e.Reason)
		}
	}
	if !slices.Contains(reasons, "Pulling") || slices.Contains(reasons, "Failed") || slices.Contains(reasons, "Pulled") {
		t.Errorf("events of the stalled pull: %v, want Pulling and neither Failed nor Pulled", reasons)
	}
	if proxy.open.Load() == 0 {
		t.Fatalf("no pull connection open through the proxy while the pull is said to go on")
	}

	grace := int64(0)
	if err := core.Pods("default").Delete(ctx, "pull-slow", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	cpWaitPod(t, admin, "pull-slow", 60*time.Second, "gone from the API", func(p *v1.Pod) bool { return p == nil })
	poll.Within(t, 30*time.Second, "the pull's connections closed", func() (bool, string) {
		return proxy.open.Load() == 0, fmt.Sprintf("%d open", proxy.open.Load())
	})
}

// stallProxy forwards loopback TCP connections to a registry, passing the
// first limit bytes of each answer and nothing after: TLS and the first
// small responses get through, a layer download stalls.
type stallProxy struct {
	host        string
	open, total atomic.Int64
}

func startStallProxy(t *testing.T, upstream string, limit int64) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{host: l.Addr().String()}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c, upstream, limit, stop)
			}()
		}
	}()
	return p
}

func (p *stallProxy) serve(c net.Conn, upstream string, limit int64, stop <-chan struct{}) {
	p.open.Add(1)
	p.total.Add(1)
	defer p.open.Add(-1)
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	clientGone := make(chan struct{})
	go func() {
		// Upstream to client: the first limit bytes, then nothing.
		_, _ = io.CopyN(c, u, limit)
	}()
	go func() {
		_, _ = io.Copy(u, c)
		close(clientGone)
	}()
	select {
	case <-clientGone:
	case <-stop:
	}
}
