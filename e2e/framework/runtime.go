//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Runtime is a private containerd (CRI, runc, CNI bridge nodelet0) started by hack/runtime-up.sh,
// with registry.k8s.io/pause:3.10 and docker.io/library/busybox:1.35 already imported.
type Runtime struct {
	// Endpoint is the CRI endpoint to give a node agent: unix://<Socket>.
	Endpoint string
	// StateDir holds everything containerd writes (config.toml, containerd.log, root/, state/).
	StateDir string
	// Socket is containerd's gRPC socket; ctr takes it as --address.
	Socket string
}

const (
	// Includes installing containerd & co. from Debian on a fresh machine (~20 s) and building the
	// images; a warm start takes a few seconds.
	runtimeUpTimeout   = 10 * time.Minute
	runtimeDownTimeout = 2 * time.Minute
	// Short on purpose: the containerd socket lives in the state dir and unix socket paths are
	// limited to 108 bytes, which t.TempDir()'s paths (named after the test) easily exceed.
	runtimeDirPattern = "nlrt-"
	runtimeOwnerFile  = "owner"
	// exit code of hack/*.sh meaning "this machine cannot run it" (NODELET_EXIT_ENV in hack/lib.sh).
	runtimeExitEnv = 3
)

// ErrUnsupported marks errors that mean "this machine cannot provide the real part" (not root,
// packages not installable, ...), as opposed to a bug. RequireRealParts skips on any error; use
// errors.Is(err, ErrUnsupported) to tell the two apart before calling it.
var ErrUnsupported = errors.New("environment cannot provide it")

// StartRuntime starts a fresh private containerd for this test and stops it, with everything it
// started (pods, shims, mounts, CNI state), when the test ends, failed or not. When the machine
// cannot run it (not root, packages not installable) the test is skipped, or fails when CI=true.
//
// Set NODELET_E2E_RUNTIME_DIR to a state dir to use a long-lived runtime instead (started there by
// hack/runtime-up.sh if needed, never stopped by the test): handy when iterating on one test.
func StartRuntime(t testing.TB) *Runtime {
	t.Helper()
	return startRuntime(t, nil)
}

// StartRuntimeOn is StartRuntime with prepare run on the fresh state dir
// before containerd starts in it: to put containerd's root (STATE_DIR/root)
// or state (STATE_DIR/state) on a filesystem of the test's choosing. What
// prepare mounts there is unmounted when the runtime is torn down. It
// never uses NODELET_E2E_RUNTIME_DIR's long-lived runtime.
func StartRuntimeOn(t testing.TB, prepare func(stateDir string) error) *Runtime {
	t.Helper()
	return startRuntime(t, prepare)
}

// RuntimeNetwork is a pod network of its own for a runtime, instead of the
// nodelet0 bridge on 10.88.0.0/16 every other runtime on the host shares.
// All of Name, Bridge and Subnet must be set, and differ from the default
// network's, so that its teardown (bridge, IP reservations, NAT rules) never
// touches another runtime's pods.
type RuntimeNetwork struct {
	// Name is the CNI network name (and the IPAM store's directory).
	Name string
	// Bridge is the Linux bridge, at most 15 bytes.
	Bridge string
	// Subnet is the IPv4 range pods get their first address from.
	Subnet string
	// Subnet6, when set, is a second, IPv6 range: every pod then gets one
	// address of each family (dual stack), the IPv4 one first.
	Subnet6 string
}

// DualStackNetwork is a dual-stack pod network no other runtime uses.
var DualStackNetwork = RuntimeNetwork{Name: "nodelet6", Bridge: "nodelet6", Subnet: "10.89.0.0/16", Subnet6: "fd00:89::/64"}

func (n RuntimeNetwork) env() []string {
	return []string{"NODELET_CNI_NETWORK=" + n.Name, "NODELET_BRIDGE=" + n.Bridge,
		"NODELET_POD_SUBNET=" + n.Subnet, "NODELET_POD_SUBNET6=" + n.Subnet6}
}

// StartRuntimeWithNetwork is StartRuntime with the pod network net (see
// RuntimeNetwork). It never uses NODELET_E2E_RUNTIME_DIR's long-lived
// runtime, whose network is the default one.
func StartRuntimeWithNetwork(t testing.TB, net RuntimeNetwork) *Runtime {
	t.Helper()
	if net.Name == "" || net.Bridge == "" || net.Subnet == "" {
		t.Fatalf("runtime network %+v: Name, Bridge and Subnet are all required", net)
	}
	rt, stop, err := launchRuntimeEnv(nil, net.env())
	return startedRuntime(t, rt, stop, err)
}

func startRuntime(t testing.TB, prepare func(stateDir string) error) *Runtime {
	t.Helper()
	if dir := os.Getenv("NODELET_E2E_RUNTIME_DIR"); dir != "" && prepare == nil {
		rt, err := runtimeUp(dir)
		if err != nil {
			runtimeFail(t, err)
		}
		t.Logf("runtime: reusing %s (NODELET_E2E_RUNTIME_DIR; not stopped at the end)", rt.StateDir)
		return rt
	}

	rt, stop, err := launchRuntime(prepare)
	return startedRuntime(t, rt, stop, err)
}

// startedRuntime registers the teardown of what launchRuntime started and
// fails (or skips) the test when it did not start.
func startedRuntime(t testing.TB, rt *Runtime, stop func() error, err error) *Runtime {
	t.Helper()
	// Registered before looking at err: a half-started runtime is torn down too.
	if stop != nil {
		t.Cleanup(func() {
			if t.Failed() && rt != nil {
				t.Logf("runtime: last lines of %s:\n%s", filepath.Join(rt.StateDir, "containerd.log"),
					runtimeTail(filepath.Join(rt.StateDir, "containerd.log"), 30))
			}
			if err := stop(); err != nil {
				t.Errorf("runtime: %v", err)
			}
		})
	}
	if err != nil {
		runtimeFail(t, err)
	}
	return rt
}

// LaunchRuntime is StartRuntime for callers without a testing.TB, such as TestMain sharing one
// runtime among a package's tests. stop is non-nil whenever something may have been started, even
// when err is not nil, and must then be called; it is safe to call more than once. Feed a non-nil
// err to RequireRealParts (or check errors.Is(err, ErrUnsupported)).
func LaunchRuntime() (rt *Runtime, stop func() error, err error) {
	return launchRuntime(nil)
}

// launchRuntime is LaunchRuntime with prepare run on the state dir first (nil: nothing) and the
// scripts run under the command prefix wrap (nsenter into a Host's namespaces; nil runs them here).
func launchRuntime(prepare func(stateDir string) error, wrap ...string) (rt *Runtime, stop func() error, err error) {
	return launchRuntimeEnv(prepare, nil, wrap...)
}

// launchRuntimeEnv is launchRuntime with env added to runtime-up's
// environment (runtime-down reads what it needs from the state dir).
func launchRuntimeEnv(prepare func(stateDir string) error, env []string, wrap ...string) (rt *Runtime, stop func() error, err error) {
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("containerd needs root: %w", ErrUnsupported)
	}
	root, err := repoRoot()
	if err != nil {
		return nil, nil, err
	}
	runtimeSweepStale(root)

	dir, err := os.MkdirTemp("/tmp", runtimeDirPattern)
	if err != nil {
		return nil, nil, fmt.Errorf("runtime state dir: %w", err)
	}
	// Who owns this runtime, so that a later run can tear it down if this process dies without
	// running its cleanups (killed by go test's -timeout, say) instead of leaking containerd.
	if err := os.WriteFile(filepath.Join(dir, runtimeOwnerFile), []byte(OwnerID(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("runtime owner file: %w", err)
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		return runtimeDown(root, dir, wrap...)
	}
	if prepare != nil {
		if err := prepare(dir); err != nil {
			return nil, stop, fmt.Errorf("prepare runtime state dir %s: %w", dir, err)
		}
	}
	rt, err = runtimeUpEnv(dir, env, wrap...)
	if err != nil {
		return nil, stop, err
	}
	return rt, stop, nil
}

// RequireRealParts applies the rule for tests that need real parts of the machine (containerd,
// a kube-apiserver, root, kernel features): when err says one is unavailable, the test is skipped,
// unless CI=true, where everything must be there and the test fails instead. err == nil: no-op.
func RequireRealParts(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v (CI=true: required)", what, err)
	}
	t.Skipf("%s not available here: %v (with CI=true this fails instead)", what, err)
}

// RepoRoot returns the root of the nodelet module (the directory whose go.mod declares
// github.com/nodelet/nodelet), found from the working directory upwards, else from this source
// file's location. It panics when neither works: nothing in e2e can run without it.
func RepoRoot() string {
	root, err := repoRoot()
	if err != nil {
		panic(err)
	}
	return root
}

// Ctr runs ctr against this runtime in the CRI namespace (k8s.io) and returns its combined output.
func (r *Runtime) Ctr(args ...string) (string, error) {
	full := append([]string{"--address", r.Socket, "--namespace", "k8s.io"}, args...)
	out, err := runtimeRun(2*time.Minute, "", nil, "ctr", full...)
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// MakeImage builds a single-layer image with hack/mkimage and imports it, so CRI sees it at once.
// args are mkimage's flags without --out, e.g. "--name", "example.com/gc:1", "--filler-bytes",
// "1048576". It returns mkimage's JSON summary line (layer digest and size, config digest).
func (r *Runtime) MakeImage(args ...string) (string, error) {
	tmp, err := os.MkdirTemp(r.StateDir, "mkimage-")
	if err != nil {
		return "", fmt.Errorf("mkimage temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	archive := filepath.Join(tmp, "image.tar")
	summary, err := r.BuildImage(archive, args...)
	if err != nil {
		return "", err
	}
	snapshotter := runtimeEnvValue(filepath.Join(r.StateDir, "runtime.env"), "SNAPSHOTTER")
	importArgs := []string{"images", "import"}
	if snapshotter != "" {
		// Unpack for the snapshotter CRI uses, or the first container from it unpacks again.
		importArgs = append(importArgs, "--snapshotter", snapshotter)
	}
	if _, err := r.Ctr(append(importArgs, archive)...); err != nil {
		return "", err
	}
	return summary, nil
}

// BuildImage writes a single-layer image with hack/mkimage to archive (docker-archive format, as
// skopeo's docker-archive: transport reads it) without importing it. args are mkimage's flags
// without --out. It returns mkimage's JSON summary line.
func (r *Runtime) BuildImage(archive string, args ...string) (string, error) {
	mkimage := filepath.Join(r.StateDir, "bin", "mkimage")
	if _, err := os.Stat(mkimage); err != nil {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		if out, err := runtimeRun(5*time.Minute, root, []string{"CGO_ENABLED=0"}, "go", "build", "-buildvcs=false", "-o", mkimage, "./hack/mkimage"); err != nil {
			return "", fmt.Errorf("build hack/mkimage: %w\n%s", err, out)
		}
	}
	summary, err := runtimeRun(2*time.Minute, "", nil, mkimage, append([]string{"--out", archive}, args...)...)
	if err != nil {
		return "", fmt.Errorf("mkimage %s: %w\n%s", strings.Join(args, " "), err, summary)
	}
	return strings.TrimSpace(summary), nil
}

// runtimeUp runs hack/runtime-up.sh on dir and describes the runtime it reports.
func runtimeUp(dir string, wrap ...string) (*Runtime, error) {
	return runtimeUpEnv(dir, nil, wrap...)
}

func runtimeUpEnv(dir string, env []string, wrap ...string) (*Runtime, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	out, err := runtimeRunWrappedEnv(runtimeUpTimeout, root, env, wrap, "bash", filepath.Join(root, "hack", "runtime-up.sh"), dir)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == runtimeExitEnv {
			return nil, fmt.Errorf("runtime-up: %w: %v\n%s", ErrUnsupported, err, runtimeLastLines(out, 15))
		}
		return nil, fmt.Errorf("runtime-up %s: %w\n%s", dir, err, runtimeLastLines(out, 40))
	}
	// The contract with the script: its last line names the endpoint.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	endpoint, ok := strings.CutPrefix(last, "CRI endpoint: ")
	if !ok || !strings.HasPrefix(endpoint, "unix://") {
		return nil, fmt.Errorf("runtime-up %s: last line %q does not name the CRI endpoint", dir, last)
	}
	return &Runtime{
		Endpoint: endpoint,
		StateDir: strings.TrimSuffix(strings.TrimPrefix(endpoint, "unix://"), "/containerd.sock"),
		Socket:   strings.TrimPrefix(endpoint, "unix://"),
	}, nil
}

// runtimeDown runs hack/runtime-down.sh --purge on dir. Should the script itself fail to run, the
// containerd recorded in the pid file is killed anyway: an orphaned containerd would outlive the
// test binary and disturb every later test on the machine.
func runtimeDown(root, dir string, wrap ...string) error {
	out, err := runtimeRunWrapped(runtimeDownTimeout, root, wrap, "bash", filepath.Join(root, "hack", "runtime-down.sh"), "--purge", dir)
	if err == nil {
		return nil
	}
	if b, rerr := os.ReadFile(filepath.Join(dir, "containerd.pid")); rerr == nil {
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return fmt.Errorf("runtime-down %s: %w\n%s", dir, err, runtimeLastLines(out, 40))
}

// runtimeSweepStale tears down runtimes left in /tmp by test processes that died without cleaning
// up. Best effort: whatever fails here is retried by the next test run.
func runtimeSweepStale(root string) {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", runtimeDirPattern+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, runtimeOwnerFile))
		if err != nil {
			continue // not one of ours, or still being set up
		}
		owner := strings.TrimSpace(string(b))
		pidStr, _, _ := strings.Cut(owner, " ")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || OwnerID(pid) == owner {
			continue // owner still alive
		}
		_ = runtimeDown(root, dir)
	}
}

// OwnerID identifies a process as "PID STARTTIME": the start time tells a live owner from
// an unrelated process that got the same pid later. "" when pid is not running.
func OwnerID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may contain spaces; the fields after its closing paren do not.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	const startTimeIdx = 19 // field 22 of proc(5), counted from field 3
	if len(fields) <= startTimeIdx {
		return ""
	}
	return fmt.Sprintf("%d %s", pid, fields[startTimeIdx])
}

func runtimeFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnsupported) {
		RequireRealParts(t, "containerd runtime", err)
		return
	}
	t.Fatalf("runtime: %v", err)
}

func repoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := goruntime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && runtimeIsNodeletMod(b) {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", errors.New("cannot find the nodelet repository root (go.mod of github.com/nodelet/nodelet) above the working directory")
}

func runtimeIsNodeletMod(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == "github.com/nodelet/nodelet"
		}
	}
	return false
}

// runtimeRunWrapped is runtimeRun of wrap + name + args.
func runtimeRunWrapped(timeout time.Duration, dir string, wrap []string, name string, args ...string) (string, error) {
	return runtimeRunWrappedEnv(timeout, dir, nil, wrap, name, args...)
}

// runtimeRunWrappedEnv is runtimeRunWrapped with env added to the
// environment (a wrap such as nsenter passes it on).
func runtimeRunWrappedEnv(timeout time.Duration, dir string, env, wrap []string, name string, args ...string) (string, error) {
	if len(wrap) > 0 {
		args = append(append(append([]string{}, wrap[1:]...), name), args...)
		name = wrap[0]
	}
	return runtimeRun(timeout, dir, env, name, args...)
}

// runtimeRun runs a command with a deadline and returns its combined output.
func runtimeRun(timeout time.Duration, dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	// If something the script starts keeps our output pipe open, Wait would block until it exits;
	// bound that too.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return buf.String(), err
}

func runtimeEnvValue(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func runtimeTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	return runtimeLastLines(string(b), n)
}

func runtimeLastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
