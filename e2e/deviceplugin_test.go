//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/deviceplugin"
)

// sampleResource is the resource the upstream sample device plugin
// advertises, with two devices Dev-1 and Dev-2; its Allocate mounts
// /tmp/<device> of the host at the same path in the container.
const sampleResource = "example.com/resource"

// TestDevicePluginSample runs the upstream sample device plugin
// (k8s.io/kubernetes/test/images/sample-device-plugin, built in the tools
// module) beside nodelet in a cluster: the node's capacity shows its two
// devices, two pods asking one each get distinct devices (the plugin's
// mount in each container), a third is refused UnexpectedAdmissionError,
// a plugin restart registers again, and a nodelet restart keeps the
// allocations: the pods keep their containers and a new pod is still
// refused (no device assigned twice).
func TestDevicePluginSample(t *testing.T) {
	bin := samplePluginBinary(t)
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	n := framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	dir := filepath.Join(n.RootDir, deviceplugin.DirName)
	plugin := startSamplePlugin(t, bin, dir)

	waitDevices(t, admin, 2, 2)
	registered := func() int { return strings.Count(n.Log(), "Device plugin registered") }
	if got := registered(); got != 1 {
		t.Errorf("registrations: %d, want 1", got)
	}

	for _, name := range []string{"dev-a", "dev-b"} {
		if _, err := cluster.KubectlInput(devicePodYAML(name, 1), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"dev-a", "dev-b"} {
		cpWaitPod(t, admin, name, 90*time.Second, "running", cpRunningInAPI)
	}
	held := checkpointDevices(t, admin, dir)
	if len(held) != 2 || held["dev-a"] == "" || held["dev-a"] == held["dev-b"] {
		t.Fatalf("devices held (checkpoint): %v, want a distinct one per pod", held)
	}
	client := framework.CRIClient(t, rt)
	ids := map[string]string{}
	for _, name := range []string{"dev-a", "dev-b"} {
		id, mounts := containerMounts(t, client, name)
		ids[name] = id
		want := "/tmp/" + held[name]
		if !mounts[want] {
			t.Errorf("pod %s: container mounts %v, want the plugin's %s", name, mounts, want)
		}
		for other, dev := range held {
			if other != name && mounts["/tmp/"+dev] {
				t.Errorf("pod %s also has %s's device %s", name, other, dev)
			}
		}
	}

	refused := func(name string) {
		t.Helper()
		if _, err := cluster.KubectlInput(devicePodYAML(name, 1), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		p := cpWaitPod(t, admin, name, 60*time.Second, "refused", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodFailed })
		if p.Status.Reason != deviceplugin.ReasonUnexpectedAdmissionError || !strings.Contains(p.Status.Message, "requested number of devices unavailable for "+sampleResource) {
			t.Errorf("pod %s refused with %q: %q, want %s", name, p.Status.Reason, p.Status.Message, deviceplugin.ReasonUnexpectedAdmissionError)
		}
	}
	refused("dev-c")

	// Plugin restart: its stream ends (devices unhealthy), the new process
	// registers again and the devices are allocatable again.
	plugin.stop(t)
	waitDevices(t, admin, 2, 0)
	plugin = startSamplePlugin(t, bin, dir)
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "plugin registered again", func() (bool, string) {
		return registered() == 2, fmt.Sprintf("%d registrations", registered())
	})
	waitDevices(t, admin, 2, 2)

	// nodelet restart: the plugin sees kubelet.sock created again and
	// registers (the sample waits 10 s before it does); the allocations
	// are read back, the pods keep their containers, no device is free.
	n.Stop()
	n.Start()
	poll.Until(t, 90*time.Second, 200*time.Millisecond, "plugin registered with the restarted nodelet", func() (bool, string) {
		return registered() == 3, fmt.Sprintf("%d registrations", registered())
	})
	if after := checkpointDevices(t, admin, dir); fmt.Sprint(after) != fmt.Sprint(held) {
		t.Errorf("devices held after the restart: %v, before: %v", after, held)
	}
	refused("dev-d")
	for _, name := range []string{"dev-a", "dev-b"} {
		p := cpWaitPod(t, admin, name, 30*time.Second, "running", cpRunningInAPI)
		if id, _ := containerMounts(t, client, name); id != ids[name] {
			t.Errorf("pod %s: container %s replaced by %s after the restart", name, ids[name], id)
		}
		if cs := framework.ContainerStatus(p, "app"); cs == nil || cs.RestartCount != 0 {
			t.Errorf("pod %s restarted: %+v", name, cs)
		}
	}
	if got := checkpointDevices(t, admin, dir); len(got) != 2 {
		t.Errorf("devices held at the end: %v", got)
	}
}

func devicePodYAML(name string, devices int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
    resources:
      limits:
        %s: %d
`, name, framework.NodeName, sampleResource, devices)
}

// waitDevices waits for the Node to show the sample resource with the
// given capacity and allocatable.
func waitDevices(t *testing.T, admin kubernetes.Interface, capacity, allocatable int64) {
	t.Helper()
	poll.Until(t, 90*time.Second, 200*time.Millisecond, fmt.Sprintf("node %s %d/%d", sampleResource, capacity, allocatable), func() (bool, string) {
		node, err := admin.CoreV1().Nodes().Get(context.Background(), framework.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c, a := node.Status.Capacity[sampleResource], node.Status.Allocatable[sampleResource]
		return c.Value() == capacity && a.Value() == allocatable, fmt.Sprintf("capacity %s allocatable %s", c.String(), a.String())
	})
}

// checkpointDevices reads nodelet's device checkpoint: the devices held,
// by the name of the pod holding them (the test's pods have one container
// each).
func checkpointDevices(t *testing.T, admin kubernetes.Interface, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, deviceplugin.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Allocations []deviceplugin.Allocation `json:"allocations"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	pods, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range pods.Items {
		names[string(p.UID)] = p.Name
	}
	out := map[string]string{}
	for _, a := range c.Allocations {
		name := names[string(a.PodUID)]
		if name == "" {
			name = "unknown pod " + string(a.PodUID)
		}
		out[name] = strings.Join(a.Devices, ",")
	}
	return out
}

// containerMounts is the running app container of a pod and the container
// paths of its mounts, from the runtime.
func containerMounts(t *testing.T, client interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatus, error)
}, pod string) (string, map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": "app"},
	})
	if err != nil || len(cs) != 1 {
		t.Fatalf("running app container of %s: %v (%d found)", pod, err, len(cs))
	}
	st, err := client.ContainerStatus(ctx, cs[0].Id, false)
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string]bool{}
	for _, m := range st.GetMounts() {
		mounts[m.ContainerPath] = true
	}
	return cs[0].Id, mounts
}

// samplePluginBinary is the upstream sample device plugin from the tools
// module, built when missing.
func samplePluginBinary(t *testing.T) string {
	t.Helper()
	root := framework.RepoRoot()
	bin := filepath.Join(root, "_output", "tools", "bin", "sample-device-plugin")
	if _, err := os.Stat(bin); err != nil {
		cmd := exec.Command("bash", filepath.Join(root, "hack", "build-tools.sh"))
		cmd.Dir, cmd.Env = root, append(os.Environ(), "TOOLS=sample-device-plugin")
		if out, err := cmd.CombinedOutput(); err != nil {
			framework.RequireRealParts(t, "sample device plugin", fmt.Errorf("hack/build-tools.sh: %w\n%s", err, out))
		}
	}
	return bin
}

type samplePlugin struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startSamplePlugin runs the sample plugin as a host process. It dials the
// fixed /var/lib/kubelet/device-plugins/kubelet.sock: it runs in a mount
// namespace of its own where that dir is the test's device-plugins dir
// (over a private tmpfs on /var/lib, so nothing of the host changes).
func startSamplePlugin(t *testing.T, bin, dir string) *samplePlugin {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		framework.RequireRealParts(t, "unshare", err)
	}
	const pluginDir = "/var/lib/kubelet/device-plugins"
	script := fmt.Sprintf("set -e; mount -t tmpfs tmpfs /var/lib; mkdir -p %[1]s; mount --bind %[2]q %[1]s; exec env PLUGIN_SOCK_DIR=%[1]s %[3]q",
		pluginDir, dir, bin)
	log, err := os.OpenFile(filepath.Join(filepath.Dir(dir), "..", "sample-device-plugin.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		framework.RequireRealParts(t, "sample device plugin", err)
	}
	p := &samplePlugin{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		log.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("sample device plugin log:\n%s", pluginLogTail(string(b), 30))
		}
	})
	return p
}

// stop ends the plugin with SIGTERM (it removes its socket) and waits.
func (p *samplePlugin) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func pluginLogTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
