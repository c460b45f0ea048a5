//go:build e2e

package framework

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/internal/upstreamkubelet"
)

// upstreamHostDir is created by the upstream kubelet whatever its --root-dir
// (device-plugins): removed at the end when a test's kubelet made it.
const upstreamHostDir = "/var/lib/kubelet"

// UpstreamKubelet is the upstream kubelet v1.37.2 (hack/build-tools.sh) run
// by a test as a cluster node on the same root dir, static pod dir, pod log
// dir and runtime as a prepared Nodelet, so that the two can take a node over
// from each other. It runs with what it needs on this cgroup v1 host
// (failCgroupV1 false, cgroupfs, no QoS cgroups, no node allocatable
// enforcement, swap allowed) and with eviction and image GC thresholds that
// never fire on a small test VM.
type UpstreamKubelet struct {
	t       testing.TB
	Bin     string
	LogFile string
	Args    []string

	mu  sync.Mutex
	cmd *exec.Cmd
	out *os.File
	// healthz is the kubelet's healthz port on 127.0.0.1.
	healthz int
}

// UpstreamKubeletBinary returns the built upstream kubelet, or fails (or
// skips outside CI) when it is missing.
func UpstreamKubeletBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(RepoRoot(), "_output", "tools", "bin", "kubelet")
	if !clusterIsExec(bin) {
		RequireRealParts(t, "upstream kubelet", fmt.Errorf("%s missing (TOOLS=kubelet hack/build-tools.sh builds it)", bin))
	}
	return bin
}

// NewUpstreamKubelet prepares (does not start) an upstream kubelet that is
// node n.NodeName of c, sharing n's root dir, manifest dir, pod log dir and
// runtime, and serving the same read-only port (Nodelet.Pods reads either
// agent's /pods). nodeIP is given to both agents' --node-ip by the caller, so that
// host-network pods keep their IP across a swap.
func NewUpstreamKubelet(t testing.TB, n *Nodelet, rt *Runtime, c *Cluster, nodeIP string) *UpstreamKubelet {
	t.Helper()
	u := &UpstreamKubelet{t: t, Bin: UpstreamKubeletBinary(t), healthz: FreePort(t)}
	dir := t.TempDir()
	u.LogFile = filepath.Join(dir, "kubelet.log")
	cfg, err := upstreamkubelet.Config{
		StaticPodPath: n.ManifestDir, PodLogsDir: n.LogDir, RuntimeEndpoint: rt.Endpoint,
		Port: FreePort(t), ReadOnlyPort: n.ReadOnlyPort, HealthzPort: u.healthz, ClientCAFile: c.CAFile,
		// Image GC and eviction off: the tests' pods are what they watch.
		Extra: map[string]any{
			"imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
			"evictionHard": map[string]string{"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
		},
	}.YAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubelet-config.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	u.Args = []string{"--config", path, "--kubeconfig", c.NodeKubeconfig,
		"--root-dir", n.RootDir, "--cert-dir", filepath.Join(dir, "pki"),
		"--hostname-override", NodeName, "--node-ip", nodeIP, "--v", "2"}
	_, statErr := os.Stat(upstreamHostDir)
	t.Cleanup(func() {
		u.Stop()
		if t.Failed() {
			t.Logf("upstream kubelet log (last 40 lines):\n%s", runtimeTail(u.LogFile, 40))
		}
		if os.IsNotExist(statErr) {
			os.RemoveAll(upstreamHostDir)
		}
	})
	return u
}

// Start runs the kubelet and waits for its healthz.
func (u *UpstreamKubelet) Start() {
	u.t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	out, err := os.OpenFile(u.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		u.t.Fatal(err)
	}
	cmd := exec.Command(u.Bin, u.Args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		u.t.Fatalf("start upstream kubelet: %v", err)
	}
	u.cmd, u.out = cmd, out
	poll.Until(u.t, 90*time.Second, 50*time.Millisecond, "upstream kubelet healthz to answer", func() (bool, string) {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(u.healthz) + "/healthz")
		if err != nil {
			return false, fmt.Sprintf("%v\n%s", err, runtimeTail(u.LogFile, 40))
		}
		resp.Body.Close()
		return true, ""
	})
}

// Stop sends SIGTERM to the kubelet's process group and waits for it to exit
// (SIGKILL after 20 s). Pods keep running, as when systemd stops a kubelet.
func (u *UpstreamKubelet) Stop() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cmd == nil {
		return
	}
	_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = u.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	u.out.Close()
	u.cmd = nil
}

// HostIP returns the first non-loopback IPv4 address of an interface that is
// up: the address both agents of a takeover test report as the node's.
func HostIP(t testing.TB) string {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLinkLocalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	RequireRealParts(t, "a non-loopback IPv4 address", fmt.Errorf("no interface has one"))
	return ""
}
