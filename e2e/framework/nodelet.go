//go:build e2e

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// NodeName is the --hostname-override every e2e nodelet runs with, so static
// pod names are predictable: <manifest name>-e2e-node.
const NodeName = "e2e-node"

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// NodeletBinary builds cmd/nodelet once per test binary, with the race
// detector, and returns its path. Every nodelet a test runs fails the test
// when it reports a data race (see NewNodelet); benchmarks build their own
// binary without it.
func NodeletBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodelet-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "nodelet")
		cmd := exec.Command("go", "build", "-race", "-o", buildBin, "./cmd/nodelet")
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/nodelet: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

var (
	plainOnce sync.Once
	plainBin  string
	plainErr  error
)

// PlainNodeletBinary builds cmd/nodelet once per test binary without the
// race detector: for a test that measures the product's own memory (the
// race detector's shadow memory and history grow by design). Set it as a
// Nodelet's Bin before Start.
func PlainNodeletBinary(t testing.TB) string {
	t.Helper()
	plainOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodelet-plain-bin-")
		if err != nil {
			plainErr = err
			return
		}
		plainBin = filepath.Join(dir, "nodelet")
		cmd := exec.Command("go", "build", "-o", plainBin, "./cmd/nodelet")
		cmd.Dir = RepoRoot()
		// As shipped (Makefile): static, no libc mapped into the agent.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			plainErr = fmt.Errorf("go build ./cmd/nodelet: %w\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBin
}

// Nodelet is one nodelet process run by a test, with its own root dir,
// manifest dir and ports.
type Nodelet struct {
	t            testing.TB
	Bin          string
	RootDir      string
	ManifestDir  string
	LogDir       string
	LogFile      string
	ReadOnlyPort int
	HealthzPort  int
	// APIPort is the authenticated node API's --port, on 127.0.0.1.
	APIPort int
	// CgroupRoot is the --cgroup-root given: private to the test
	// (NewCgroupRoot), the pods' cgroups are under CgroupRoot/kubepods.
	CgroupRoot string
	Args       []string

	mu  sync.Mutex
	cmd *exec.Cmd
	out *os.File
}

// NewNodelet prepares (does not start) a nodelet on rt. extra flags are
// appended to the defaults; a --pod-manifest-path among them replaces the
// default manifest dir.
func NewNodelet(t testing.TB, rt *Runtime, extra ...string) *Nodelet {
	t.Helper()
	dir := t.TempDir()
	n := &Nodelet{
		t:            t,
		Bin:          NodeletBinary(t),
		RootDir:      filepath.Join(dir, "root"),
		ManifestDir:  filepath.Join(dir, "manifests"),
		LogDir:       filepath.Join(dir, "logs"),
		LogFile:      filepath.Join(dir, "nodelet.log"),
		ReadOnlyPort: FreePort(t),
		HealthzPort:  FreePort(t),
		APIPort:      FreePort(t),
	}
	for _, d := range []string{n.RootDir, n.ManifestDir, n.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: "+n.LogDir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--config", cfg,
		"--container-runtime-endpoint", rt.Endpoint,
		"--root-dir", n.RootDir,
		"--hostname-override", NodeName,
		"--read-only-port", strconv.Itoa(n.ReadOnlyPort),
		"--healthz-port", strconv.Itoa(n.HealthzPort),
		// Never the default 0.0.0.0:10250: tests may run beside another agent.
		"--port", strconv.Itoa(n.APIPort),
		"--address", "127.0.0.1",
		"--v", "3",
	}
	// Before the cleanup below, so that it runs after nodelet stopped.
	n.CgroupRoot = NewCgroupRoot(t)
	args = append(args, "--cgroup-root", n.CgroupRoot)
	hasPath := false
	for _, a := range extra {
		if strings.HasPrefix(a, "--pod-manifest-path") {
			hasPath = true
		}
	}
	if !hasPath {
		args = append(args, "--pod-manifest-path", n.ManifestDir)
	}
	n.Args = append(args, extra...)
	t.Cleanup(func() {
		n.Stop()
		// After the stop, so that races of the shutdown count too.
		if races := RaceReports(n.Log()); len(races) > 0 {
			t.Errorf("nodelet reported %d data race(s); the first:\n%s", len(races), races[0])
		}
		if t.Failed() {
			t.Logf("nodelet log (last 60 lines):\n%s", runtimeTail(n.LogFile, 60))
		}
		// Pods outlive nodelet, and so do the mounts it made for them
		// (subPath binds, tmpfs volumes). Removing the temp dir through a
		// bind would delete what it shows, e.g. a hostPath of the node.
		if err := UnmountAll(dir); err != nil {
			t.Errorf("unmount what nodelet left under %s: %v", dir, err)
		}
	})
	return n
}

// StartNodelet is NewNodelet + Start.
func StartNodelet(t testing.TB, rt *Runtime, extra ...string) *Nodelet {
	n := NewNodelet(t, rt, extra...)
	n.Start()
	return n
}

// Start runs the nodelet process (again, after Stop) and waits for its
// healthz port.
func (n *Nodelet) Start() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	out, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	cmd := exec.Command(n.Bin, n.Args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		n.t.Fatalf("start nodelet: %v", err)
	}
	n.cmd, n.out = cmd, out
	poll.Until(n.t, 90*time.Second, 50*time.Millisecond, "nodelet healthz to answer", func() (bool, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HealthzPort))
		if err != nil {
			return false, fmt.Sprintf("%v\n%s", err, runtimeTail(n.LogFile, 40))
		}
		resp.Body.Close()
		return true, ""
	})
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 20 s).
func (n *Nodelet) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = n.cmd.Process.Kill()
		<-done
	}
	n.out.Close()
	n.cmd = nil
}

// raceMarker begins each report of the race detector.
const raceMarker = "WARNING: DATA RACE"

// RaceReports returns the race detector's reports in a log, each cut to
// its first 60 lines.
func RaceReports(log string) []string {
	parts := strings.Split(log, raceMarker)
	var out []string
	for _, p := range parts[1:] {
		lines := strings.SplitN(p, "\n", 61)
		out = append(out, raceMarker+strings.Join(lines[:min(len(lines), 60)], "\n"))
	}
	return out
}

// Log returns the nodelet's output so far.
func (n *Nodelet) Log() string {
	b, _ := os.ReadFile(n.LogFile)
	return string(b)
}

// WriteManifest writes a manifest file atomically (write + rename), as
// configuration management tools do.
func (n *Nodelet) WriteManifest(name, content string) {
	n.t.Helper()
	tmp := filepath.Join(n.ManifestDir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n.ManifestDir, name)); err != nil {
		n.t.Fatal(err)
	}
}

// RemoveManifest deletes a manifest file.
func (n *Nodelet) RemoveManifest(name string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.ManifestDir, name)); err != nil {
		n.t.Fatal(err)
	}
}

// Pods reads /pods from the read-only port.
func (n *Nodelet) Pods() ([]v1.Pod, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", n.ReadOnlyPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/pods: %s: %s", resp.Status, body)
	}
	var list v1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("/pods: %w", err)
	}
	return list.Items, nil
}

// Pod returns the pod named name (full static name) from /pods, or nil.
func (n *Nodelet) Pod(name string) (*v1.Pod, error) {
	pods, err := n.Pods()
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// WaitPod polls /pods until cond holds for the named pod (nil when absent).
func (n *Nodelet) WaitPod(name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var last *v1.Pod
	poll.Until(n.t, timeout, 50*time.Millisecond, "pod "+name+": "+what, func() (bool, string) {
		p, err := n.Pod(name)
		last = p
		if err == nil && cond(p) {
			return true, ""
		}
		b, _ := json.MarshalIndent(p, "", "  ")
		return false, fmt.Sprintf("error %v, pod:\n%s", err, b)
	})
	return last
}

// Readyz returns the status code and body of the healthz server's /readyz.
func (n *Nodelet) Readyz() (int, string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", n.HealthzPort))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// Running reports whether every container of p is running.
func Running(p *v1.Pod) bool {
	if p == nil || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// ContainerStatus returns the status of the named container of p.
func ContainerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	if p == nil {
		return nil
	}
	return findStatus(p.Status.ContainerStatuses, name)
}

// InitContainerStatus returns the status of the named init container
// (sidecars included) of p.
func InitContainerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	if p == nil {
		return nil
	}
	return findStatus(p.Status.InitContainerStatuses, name)
}

// EphemeralContainerStatus returns the status of the named ephemeral
// container of p.
func EphemeralContainerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	if p == nil {
		return nil
	}
	return findStatus(p.Status.EphemeralContainerStatuses, name)
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// CRIClient dials rt with nodelet's own CRI client, for tests that look at
// what really runs (exit codes, finish times) rather than at /pods.
func CRIClient(t testing.TB, rt *Runtime) *cri.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, rt.Endpoint)
	if err != nil {
		t.Fatalf("dial CRI: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
