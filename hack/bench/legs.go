package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nodelet/nodelet/internal/upstreamkubelet"
)

// leg drives one subject through the benchmark.
type leg interface {
	// start brings the subject up; it returns how long it took until it answered (0 if no process).
	start(ctx context.Context) (time.Duration, error)
	// one starts the pod id and returns "manifest written -> container running".
	one(ctx context.Context, id string) (time.Duration, error)
	// burst starts all ids at once and returns the wall time until all run.
	burst(ctx context.Context, ids []string) (time.Duration, error)
	// pid of the subject's process, 0 when there is none (raw CRI).
	pid() int
	stop()
}

// rawLeg is the floor: the CRI calls every agent must make, issued directly.
type rawLeg struct {
	cri    *criClient
	logDir string
}

func (r *rawLeg) start(context.Context) (time.Duration, error) {
	return 0, os.MkdirAll(r.logDir, 0o755)
}

func (r *rawLeg) one(ctx context.Context, id string) (time.Duration, error) {
	t0 := time.Now()
	err := r.cri.runPod(ctx, "bench-"+id, r.logDir)
	return time.Since(t0), err
}

// burst issues all pods concurrently, as a pod-worker-per-pod agent would.
func (r *rawLeg) burst(ctx context.Context, ids []string) (time.Duration, error) {
	t0 := time.Now()
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.cri.runPod(ctx, "bench-"+id, r.logDir)
		}()
	}
	wg.Wait()
	d := time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

func (r *rawLeg) pid() int { return 0 }
func (r *rawLeg) stop()    {}

// agentLeg runs an agent process on a manifest dir and watches its read-only /pods.
type agentLeg struct {
	a       *agent
	argv    func(a *agent) ([]string, error)
	poll    time.Duration
	timeout time.Duration
}

func (l *agentLeg) start(ctx context.Context) (time.Duration, error) {
	argv, err := l.argv(l.a)
	if err != nil {
		return 0, err
	}
	return l.a.start(ctx, argv, 90*time.Second)
}

func (l *agentLeg) one(ctx context.Context, id string) (time.Duration, error) {
	if err := l.a.writeManifest(id); err != nil {
		return 0, err
	}
	t0 := time.Now()
	err := l.a.waitRunning(ctx, []string{id}, l.poll, l.timeout)
	return time.Since(t0), err
}

func (l *agentLeg) burst(ctx context.Context, ids []string) (time.Duration, error) {
	t0 := time.Now()
	for _, id := range ids {
		if err := l.a.writeManifest(id); err != nil {
			return 0, err
		}
	}
	err := l.a.waitRunning(ctx, ids, l.poll, 4*l.timeout)
	return time.Since(t0), err
}

func (l *agentLeg) pid() int { return l.a.pid() }

// stop stops the agent and releases the mounts it left under its state dir (the upstream kubelet
// bind-mounts its root dir onto itself to make it rshared).
func (l *agentLeg) stop() {
	l.a.stop(15 * time.Second)
	if err := unmountUnder(filepath.Dir(l.a.rootDir)); err != nil {
		logf("%s: %v", l.a.name, err)
	}
}

// unmountUnder unmounts every mount point at or below dir, deepest first.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, mp := range points {
		if err := syscall.Unmount(mp, 0); err != nil {
			if err2 := syscall.Unmount(mp, syscall.MNT_DETACH); err2 != nil && err2 != syscall.EINVAL {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err2))
			}
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// upstreamArgv runs the upstream kubelet standalone (no kubeconfig) with the configuration that
// works on this cgroup v1 hybrid host (see shared NOTES).
func upstreamArgv(bin, endpoint, nodeName string, readOnlyPort int) func(a *agent) ([]string, error) {
	return func(a *agent) ([]string, error) {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("not available: %s missing (hack/build-tools.sh builds it)", bin)
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		healthz, err := freePort()
		if err != nil {
			return nil, err
		}
		cfg, err := upstreamkubelet.Config{
			StaticPodPath: a.manifestDir, RuntimeEndpoint: endpointURL(endpoint),
			Port: port, ReadOnlyPort: readOnlyPort, HealthzPort: healthz,
		}.YAML()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(filepath.Dir(a.rootDir), "kubelet-config.yaml")
		if err := os.WriteFile(path, cfg, 0o644); err != nil {
			return nil, err
		}
		// --cert-dir defaults to /var/lib/kubelet/pki whatever --root-dir says.
		return []string{bin, "--config", path, "--root-dir", a.rootDir, "--cert-dir", filepath.Join(a.rootDir, "pki"),
			"--hostname-override", nodeName, "--v", "1"}, nil
	}
}

func nodeletArgv(bin, endpoint, nodeName string, readOnlyPort int) func(a *agent) ([]string, error) {
	return func(a *agent) ([]string, error) {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("not available: %s missing (go build -o %s ./cmd/nodelet)", bin, bin)
		}
		return []string{bin,
			"--pod-manifest-path", a.manifestDir,
			"--container-runtime-endpoint", endpointURL(endpoint),
			"--root-dir", a.rootDir,
			"--read-only-port", fmt.Sprint(readOnlyPort),
			"--hostname-override", nodeName,
		}, nil
	}
}

func endpointURL(ep string) string {
	if strings.Contains(ep, "://") {
		return ep
	}
	return "unix://" + ep
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// binaryVersion runs BIN --version and returns its first line, or "".
func binaryVersion(bin string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// removeBenchLogs deletes the log directories that agents keep outside their root dir
// (/var/log/pods, /var/log/containers), only for this benchmark's pods.
func removeBenchLogs() {
	for _, pattern := range []string{"/var/log/pods/default_bench-*", "/var/log/containers/bench-*_default_*"} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			_ = os.RemoveAll(m)
		}
	}
}
