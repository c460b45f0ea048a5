//go:build e2e

package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/poll"
)

// Host is one kubeadm node of a test: a private mount namespace (and, for a second node, a private
// network namespace) held open by a `sleep` process, in which kubeadm, the node's containerd and
// nodelet run. kubeadm's fixed paths (/etc/kubernetes, /var/lib/kubelet, /var/lib/etcd, host paths
// of its static pods under /usr, the kubelet's /var/log/pods) are host-global, so /etc, /var/lib,
// /usr and /var/log are overlays there whose upper layers live in the test's temp dir: the host's
// own files are read through them, nothing kubeadm writes reaches the host, and all of it is gone
// when the namespace's last process exits, even after a failed or killed test.
type Host struct {
	t testing.TB
	// Dir holds the overlays' upper layers and the logs.
	Dir string
	// Pid is the namespace holder's pid; /proc/<Pid>/root is the host's view of the node's files.
	Pid int
	// NetNS: the host has its own network namespace (see ConnectToHost).
	NetNS bool

	holder *exec.Cmd
}

// StartHost creates the namespaces and overlays. Cleanup kills the holder; register the runtime and
// nodelet after it (t.Cleanup is LIFO) so that they are stopped first.
func StartHost(t testing.TB, name string, netns bool) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		RequireRealParts(t, "kubeadm host", fmt.Errorf("namespaces and overlays need root: %w", ErrUnsupported))
	}
	for _, c := range []string{"unshare", "nsenter", "ip"} {
		if _, err := exec.LookPath(c); err != nil {
			RequireRealParts(t, "kubeadm host", fmt.Errorf("%s: %w", c, ErrUnsupported))
		}
	}
	// Short, under /tmp: it appears in mount options and socket paths.
	dir, err := os.MkdirTemp("/tmp", "nlkadm-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--mount", "--propagation", "private"}
	if netns {
		args = append(args, "--net")
	}
	holder := exec.Command("unshare", append(args, "--", "sleep", "infinity")...)
	if err := holder.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("host %s: unshare: %v", name, err)
	}
	h := &Host{t: t, Dir: dir, Pid: holder.Process.Pid, NetNS: netns, holder: holder}
	t.Cleanup(func() {
		_ = h.holder.Process.Kill()
		_, _ = h.holder.Process.Wait()
		if err := os.RemoveAll(h.Dir); err != nil {
			t.Errorf("host %s: remove %s: %v", name, h.Dir, err)
		}
	})
	// unshare execs sleep once the namespaces exist.
	self, _ := os.Readlink("/proc/self/ns/mnt")
	poll.Until(t, 30*time.Second, 20*time.Millisecond, "the host's mount namespace", func() (bool, string) {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", h.Pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", h.Pid))
		return err == nil && ns != self && strings.TrimSpace(string(comm)) == "sleep", fmt.Sprintf("ns %s err %v", ns, err)
	})
	var script strings.Builder
	// /usr too: kubeadm's controller-manager manifest has DirectoryOrCreate host paths under
	// /usr/libexec/kubernetes and /usr/local/share/ca-certificates.
	// /var/log too: a kubelet's podLogsDir (/var/log/pods) and /var/log/containers are host-global
	// paths as well. Shared, each node's container GC deletes the log directories of the pods the
	// other node runs (it knows them neither in its runtime nor in its pods, which is upstream's
	// rule too), and of the machine's other agents. Over the overlay both are empty directories
	// of the node's own, so nothing the machine had there is seen or deleted.
	for _, d := range []string{"/etc", "/var/lib", "/usr", "/var/log"} {
		base := filepath.Join(dir, strings.ReplaceAll(strings.Trim(d, "/"), "/", "-"))
		fmt.Fprintf(&script, "mkdir -p %[1]s-upper %[1]s-work && mount -t overlay overlay -o lowerdir=%[2]s,upperdir=%[1]s-upper,workdir=%[1]s-work %[2]s && ", base, d)
	}
	for _, d := range []string{"/var/log/pods", "/var/log/containers"} {
		own := filepath.Join(dir, strings.ReplaceAll(strings.Trim(d, "/"), "/", "-"))
		fmt.Fprintf(&script, "mkdir -p %[1]s %[2]s && mount --bind %[1]s %[2]s && ", own, d)
	}
	script.WriteString("mkdir -p /etc/kubernetes /var/lib/kubelet /var/lib/etcd")
	if netns {
		script.WriteString(" && ip link set lo up")
	}
	if out, err := h.Run(time.Minute, "sh", "-c", script.String()); err != nil {
		t.Fatalf("host %s: overlays: %v\n%s", name, err, out)
	}
	return h
}

// Command is a command run inside the host's namespaces.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	ns := []string{"-t", fmt.Sprint(h.Pid), "-m"}
	if h.NetNS {
		ns = append(ns, "-n")
	}
	return exec.CommandContext(ctx, "nsenter", append(append(ns, "--", name), args...)...)
}

// Run runs a command inside the host's namespaces and returns its combined output.
func (h *Host) Run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := h.Command(ctx, name, args...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return string(out), err
}

// Path is the host-side path of a file as the node sees it (/proc/<pid>/root/...).
func (h *Host) Path(p string) string {
	return filepath.Join(fmt.Sprintf("/proc/%d/root", h.Pid), p)
}

// Wrap is the command prefix that enters the host's namespaces.
func (h *Host) Wrap() []string {
	w := []string{"nsenter", "-t", fmt.Sprint(h.Pid), "-m"}
	if h.NetNS {
		w = append(w, "-n")
	}
	return append(w, "--")
}

// Link connects a host with its own network namespace to peer's network (nil: the machine's): a
// veth pair with peerIP/30 on peer's side (named link there) and nodeIP/30 on this host's (eth0),
// and this host's default route through it. Through it the host reaches every address of peer
// (another node's API server) and peer reaches the host (the API server dialing its kubelet port).
// The pair goes away with the namespace.
func (h *Host) Link(peer *Host, link, peerIP, nodeIP string) {
	h.t.Helper()
	var wrap []string
	if peer != nil {
		wrap = []string{"nsenter", "-t", fmt.Sprint(peer.Pid), "-n", "--"}
	}
	peerScript := fmt.Sprintf("ip link add %s type veth peer name eth0 netns %d && ip addr add %s/30 dev %s && ip link set %s up",
		link, h.Pid, peerIP, link, link)
	args := append(wrap, "sh", "-c", peerScript)
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		h.t.Fatalf("%s: %v\n%s", peerScript, err, out)
	}
	if peer == nil {
		h.t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
	}
	script := fmt.Sprintf("ip addr add %s/30 dev eth0 && ip link set eth0 up && ip route add default via %s", nodeIP, peerIP)
	if out, err := h.Run(time.Minute, "sh", "-c", script); err != nil {
		h.t.Fatalf("node side of %s: %v\n%s", link, err, out)
	}
}

// StartRuntime starts a private containerd inside the host's namespaces (hack/runtime-up.sh), so
// that the host paths of kubeadm's static pods resolve in the node's view, and stops it there when
// the test ends.
func (h *Host) StartRuntime() *Runtime {
	h.t.Helper()
	rt, stop, err := launchRuntime(nil, h.Wrap()...)
	if stop != nil {
		h.t.Cleanup(func() {
			if h.t.Failed() && rt != nil {
				h.t.Logf("runtime: last lines of containerd.log:\n%s", runtimeTail(filepath.Join(rt.StateDir, "containerd.log"), 30))
			}
			if err := stop(); err != nil {
				h.t.Errorf("runtime: %v", err)
			}
		})
	}
	if err != nil {
		runtimeFail(h.t, err)
	}
	return rt
}

// Kubelet is the node agent (nodelet, or the upstream kubelet for a reference run) run as kubeadm's
// systemd drop-in (10-kubeadm.conf) runs a kubelet:
//
//	kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
//
// with KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf
// --kubeconfig=/etc/kubernetes/kubelet.conf, KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml
// and KUBELET_KUBEADM_ARGS from /var/lib/kubelet/kubeadm-flags.env, all as kubeadm wrote them.
type Kubelet struct {
	h       *Host
	Bin     string
	Name    string // "nodelet" or "kubelet"
	LogFile string
	Args    []string
	// cgroupRoot is the node's private --cgroup-root (NewCgroupRoot).
	cgroupRoot string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *os.File
}

// NewKubelet prepares nodelet with the drop-in's command line; Start reads kubeadm-flags.env.
func (h *Host) NewKubelet(bin string) *Kubelet { return h.NewAgent(bin, "nodelet") }

// NewAgent prepares bin (nodelet or a kubelet) with the drop-in's command line; name names its log
// (<name>.log in Dir) and its messages. Only nodelet gets a private --cgroup-root (see Start): the
// upstream kubelet of the reference run has no QoS cgroups (its KubeletConfiguration says so) and
// leaves its pods' cgroups to the runtime.
func (h *Host) NewAgent(bin, name string) *Kubelet {
	k := &Kubelet{h: h, Bin: bin, Name: name, LogFile: filepath.Join(h.Dir, name+".log")}
	if name == "nodelet" {
		// Before the cleanup below, so that it runs after nodelet stopped.
		k.cgroupRoot = NewCgroupRoot(h.t)
	}
	h.t.Cleanup(func() {
		k.Stop()
		if races := RaceReports(k.Log()); len(races) > 0 {
			h.t.Errorf("%s reported %d data race(s); the first:\n%s", name, len(races), races[0])
		}
		if h.t.Failed() {
			h.t.Logf("%s log (last 80 lines):\n%s", name, runtimeTail(k.LogFile, 80))
		}
	})
	return k
}

// KubeadmFlags parses KUBELET_KUBEADM_ARGS out of kubeadm-flags.env as systemd's EnvironmentFile
// and the drop-in's unquoted $KUBELET_KUBEADM_ARGS expansion do: the value, split on white space.
func KubeadmFlags(env string) ([]string, error) {
	for _, line := range strings.Split(env, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "KUBELET_KUBEADM_ARGS=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		return strings.Fields(v), nil
	}
	return nil, errors.New("no KUBELET_KUBEADM_ARGS line")
}

// Start starts the agent with the drop-in's flags, as `systemctl restart kubelet` would.
func (k *Kubelet) Start() {
	t := k.h.t
	t.Helper()
	env, err := os.ReadFile(k.h.Path("/var/lib/kubelet/kubeadm-flags.env"))
	if err != nil {
		t.Fatalf("kubelet: %v", err)
	}
	flags, err := KubeadmFlags(string(env))
	if err != nil {
		t.Fatalf("kubelet: kubeadm-flags.env %q: %v", env, err)
	}
	k.Args = append([]string{
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
		"--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml",
	}, flags...)
	// $KUBELET_EXTRA_ARGS, as an operator sets them in /etc/default/kubelet:
	// kubeadm writes cgroupDriver: systemd, which this host (no systemd)
	// cannot do, and the nodes of one test share the host's cgroups, so
	// each gets its own root.
	if k.cgroupRoot != "" {
		k.Args = append(k.Args, "--cgroup-driver=cgroupfs", "--cgroup-root="+k.cgroupRoot)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	out, err := os.OpenFile(k.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(out, "=== %s %s\n", k.Bin, strings.Join(k.Args, " "))
	cmd := k.h.Command(context.Background(), k.Bin, k.Args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start %s: %v", k.Name, err)
	}
	k.cmd, k.out, k.done = cmd, out, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(k.done)
}

// Exited reports whether the started agent has exited.
func (k *Kubelet) Exited() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done == nil {
		return false
	}
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// Stop is `systemctl stop kubelet`: SIGTERM, SIGKILL after 20 s.
func (k *Kubelet) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return
	}
	// nsenter forwards the signal to the agent and exits with it.
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(20 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
	k.out.Close()
	k.cmd = nil
}

// Log is what the agent wrote so far.
func (k *Kubelet) Log() string {
	b, _ := os.ReadFile(k.LogFile)
	return string(b)
}

// Kubeadm is a running kubeadm command whose output is watched line by line.
type Kubeadm struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
	mu   sync.Mutex
	out  strings.Builder
}

// StartKubeadm runs kubeadm with args inside the host; its output goes to log too. kubelet is put
// on kubeadm's PATH as `kubelet`, where its preflight looks for the node agent's version.
func (h *Host) StartKubeadm(ctx context.Context, bin, kubelet string, log io.Writer, args ...string) (*Kubeadm, error) {
	binDir := filepath.Join(h.Dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(binDir, "kubelet")); err != nil {
		if err := os.Symlink(kubelet, filepath.Join(binDir, "kubelet")); err != nil {
			return nil, err
		}
	}
	cmd := h.Command(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ka := &Kubeadm{cmd: cmd, done: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		s := bufio.NewScanner(pr)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			line := s.Text()
			fmt.Fprintln(log, line)
			ka.mu.Lock()
			ka.out.WriteString(line + "\n")
			ka.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		<-scanned
		ka.err = err
		close(ka.done)
	}()
	return ka, nil
}

// WaitOutput waits until kubeadm has printed a line containing substr; an error when it exits or
// the timeout passes first.
func (ka *Kubeadm) WaitOutput(substr string, timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.Contains(ka.Output(), substr) {
			return nil
		}
		select {
		case <-ka.done:
			if strings.Contains(ka.Output(), substr) {
				return nil
			}
			return fmt.Errorf("kubeadm exited (%v) before printing %q", ka.err, substr)
		case <-deadline:
			return fmt.Errorf("kubeadm printed no %q within %v", substr, timeout)
		case <-tick.C:
		}
	}
}

// Wait waits for kubeadm to exit.
func (ka *Kubeadm) Wait() error { <-ka.done; return ka.err }

// Output is everything kubeadm printed so far.
func (ka *Kubeadm) Output() string {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	return ka.out.String()
}

// KubectlBinary is the kubectl e2e tests use ($KUBECTL, Debian's, else one built from the tools
// module); the test is skipped (fails under CI=true) when there is none.
func KubectlBinary(t testing.TB) string {
	t.Helper()
	k, err := clusterKubectl(RepoRoot())
	RequireRealParts(t, "kubectl", err)
	return k
}
