//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

const (
	kubeadmVersion = "v1.37.2"
	kubeadmCPName  = "kadm-cp"
	// Addon phases skipped: no coredns image can be built here (no registry, and CoreDNS is not in
	// the tools module), and kube-proxy would rewrite the host's iptables outside the test's
	// namespaces. Every other phase of init runs, kubelet-finalize included.
	kubeadmSkipPhases = "addon/coredns,addon/kube-proxy"
)

// kubeadmEnv is what a kubeadm test needs from the tools module: kubeadm itself and the
// control-plane images, built and imported into rt by hack/kubeadm-images.sh.
type kubeadmEnv struct {
	kubeadm string
	kubectl string
	nodelet string
	// upstream is the upstream kubelet for the reference run (NODELET_KUBEADM_UPSTREAM=1), else "".
	upstream string
}

func kubeadmSetup(t *testing.T) kubeadmEnv {
	t.Helper()
	root := framework.RepoRoot()
	bin := filepath.Join(root, "_output", "tools", "bin")
	upstream := os.Getenv(kubeadmUpstreamEnv) == "1"
	tools := "kubeadm etcd kube-apiserver kube-controller-manager kube-scheduler"
	if upstream {
		tools += " kubelet"
	}
	t.Logf("building kubeadm and the control plane (hack/build-tools.sh; a cold build takes many minutes)")
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-tools.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TOOLS="+tools)
	if out, err := cmd.CombinedOutput(); err != nil {
		framework.RequireRealParts(t, "kubeadm and the control plane", fmt.Errorf("hack/build-tools.sh: %w\n%s", err, out))
	}
	env := kubeadmEnv{
		kubeadm: filepath.Join(bin, "kubeadm"),
		kubectl: framework.KubectlBinary(t),
		nodelet: framework.NodeletBinary(t),
	}
	if upstream {
		env.upstream = framework.UpstreamKubeletBinary(t)
	}
	return env
}

// kubeadmImages builds (cached) and imports kubeadm's control-plane images into rt.
func kubeadmImages(t *testing.T, rt *framework.Runtime) {
	t.Helper()
	root := framework.RepoRoot()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "kubeadm-images.sh"), rt.StateDir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/kubeadm-images.sh: %v\n%s", err, out)
	}
}

// kubeadmNode is one node of the test: its namespaces, runtime and node agent (nodelet, or the
// upstream kubelet in the reference run).
type kubeadmNode struct {
	name    string
	host    *framework.Host
	rt      *framework.Runtime
	kubelet *framework.Kubelet
	// agentStarted is when kubeadmRun last started the agent.
	agentStarted time.Time
}

// newKubeadmNode prepares a node in its own mount and network namespaces with agent (a binary,
// named agentName in logs) as its kubelet; link connects its network before the runtime starts.
// Only a control-plane node gets the control-plane images.
func newKubeadmNode(t *testing.T, name, agent, agentName string, controlPlane bool, link func(*framework.Host)) *kubeadmNode {
	t.Helper()
	h := framework.StartHost(t, name, true)
	link(h)
	rt := h.StartRuntime()
	if controlPlane {
		kubeadmImages(t, rt)
	}
	return &kubeadmNode{name: name, host: h, rt: rt, kubelet: h.NewAgent(agent, agentName)}
}

// kubeadmRun runs kubeadm args on n the way an operator on a systemd host would: once kubeadm has
// written the kubelet's files and says it starts the kubelet (`systemctl restart kubelet`, which
// fails without systemd), n's agent is started with the drop-in's flags. It fails the test unless
// kubeadm succeeds, and returns kubeadm's output.
func kubeadmRun(t *testing.T, env kubeadmEnv, n *kubeadmNode, timeout time.Duration, args ...string) string {
	t.Helper()
	logPath := filepath.Join(n.host.Dir, "kubeadm-"+args[0]+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ka, err := n.host.StartKubeadm(ctx, env.kubeadm, n.kubelet.Bin, logf, args...)
	if err != nil {
		t.Fatalf("kubeadm %s: %v", args[0], err)
	}
	if err := ka.WaitOutput("[kubelet-start] Starting the kubelet", timeout); err != nil {
		_ = ka.Wait()
		t.Fatalf("kubeadm %s: %v\n%s", args[0], err, ka.Output())
	}
	n.agentStarted = time.Now()
	n.kubelet.Start()
	if err := ka.Wait(); err != nil {
		t.Fatalf("kubeadm %s failed: %v\n%s", args[0], err, ka.Output())
	}
	if n.kubelet.Exited() {
		t.Fatalf("%s exited during kubeadm %s", n.kubelet.Name, args[0])
	}
	return ka.Output()
}

// TestKubeadm runs `kubeadm init` (v1.37.2, built in the tools module, with control-plane images
// built locally from the tools module's binaries) with nodelet as the node's kubelet, started as
// kubeadm's systemd drop-in starts one, against the node's own containerd. Every phase of init must
// complete, kubelet-finalize included; nodelet must run the control plane kubeadm writes as static
// pods, register, mirror them and go Ready; a pod must run, with kubectl logs and exec working
// through the node API. A second nodelet node joins with a bootstrap token (kubeadmJoin). Then
// `kubeadm reset -f` must clean up both. Each node lives in private mount and network namespaces
// (framework.Host): its /etc, /var/lib and /usr are overlays, so kubeadm's fixed paths never touch
// the machine's, and its well-known ports (6443, 2379/2380, 10248, 10250, 10257, 10259) are its
// own. The control-plane node is linked to the machine by a veth pair (the test's kubectl reaches
// the API server through it), the worker to the control-plane node.
// kubeadm's two addon phases are skipped (kubeadmSkipPhases says why).
func TestKubeadm(t *testing.T) {
	begin := time.Now()
	t.Cleanup(func() { t.Logf("MEASURE TestKubeadm wall time: %.1f s", time.Since(begin).Seconds()) })
	env := kubeadmSetup(t)
	// A /30 per link and test process, so parallel runs on one machine do not collide.
	third := os.Getpid()%100*2 + 20
	cp := newKubeadmNode(t, "cp", env.nodelet, "nodelet", true, func(h *framework.Host) {
		h.Link(nil, fmt.Sprintf("nlkadm%d", third), fmt.Sprintf("10.111.%d.1", third), fmt.Sprintf("10.111.%d.2", third))
	})

	initStart := time.Now()
	out := kubeadmRun(t, env, cp, 10*time.Minute, kubeadmInitArgs(t, env, cp)...)
	t.Logf("MEASURE kubeadm init (nodelet as the kubelet): %.1f s", time.Since(initStart).Seconds())
	for _, want := range []string{
		"[kubelet-check] The kubelet is healthy",
		// Printed only when it found kubelet-client-current.pem.
		"[kubelet-finalize] Updating \"/etc/kubernetes/kubelet.conf\" to point to a rotatable kubelet client certificate",
		"Your Kubernetes control-plane has initialized successfully",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubeadm init printed no %q", want)
		}
	}
	// kubeadm's preflight read nodelet's version as a kubelet's.
	if strings.Contains(out, "couldn't get kubelet version") || strings.Contains(out, "KubeletVersion") {
		t.Errorf("kubeadm's preflight could not read nodelet's version:\n%s", grepLines(out, "KubeletVersion", "kubelet version"))
	}

	admin := cp.host.Path("/etc/kubernetes/admin.conf")
	kubectl := func(args ...string) (string, error) {
		b, err := exec.Command(env.kubectl, append([]string{"--kubeconfig", admin}, args...)...).CombinedOutput()
		return string(b), err
	}

	// kubelet-finalize pointed kubelet.conf at the rotating pair nodelet keeps.
	conf, err := os.ReadFile(cp.host.Path("/etc/kubernetes/kubelet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), "/var/lib/kubelet/pki/kubelet-client-current.pem") {
		t.Errorf("kubelet.conf does not use kubelet-client-current.pem after kubelet-finalize:\n%s", conf)
	}

	// kubelet-finalize restarts the kubelet (`systemctl restart kubelet`; there is no systemd here):
	// nodelet comes back with the credential from the file kubelet.conf now names.
	cp.kubelet.Stop()
	cp.kubelet.Start()
	kubeadmNodeReady(t, kubectl, kubeadmCPName)
	// The four static pods, mirrored and running.
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		pod := c + "-" + kubeadmCPName
		poll.Until(t, 3*time.Minute, time.Second, "mirror pod "+pod+" Running and Ready", func() (bool, string) {
			out, err := kubectl("-n", "kube-system", "get", "pod", pod, "-o",
				`jsonpath={.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.metadata.annotations.kubernetes\.io/config\.mirror}`)
			f := strings.Fields(out)
			return err == nil && len(f) == 3 && f[0] == "Running" && f[1] == "True", out
		})
	}

	kubeadmCheckPod(t, kubectl, "kadm-p1", kubeadmCPName)

	// The worker's namespaces, runtime and nodelet belong to the subtest (its cleanups end them),
	// so its reset runs inside it too.
	t.Run("join", func(t *testing.T) {
		worker := kubeadmJoin(t, env, cp, kubectl, third+1)
		t.Run("reset", func(t *testing.T) { kubeadmReset(t, env, worker) })
	})
	// The reference: the upstream kubelet joins the same cluster the same way.
	t.Run("join-upstream", func(t *testing.T) { kubeadmJoinUpstream(t, env, cp, kubectl, third+1) })
	t.Run("reset", func(t *testing.T) { kubeadmReset(t, env, cp) })
}

// kubeadmInitArgs is the `kubeadm init` command line. In the upstream reference run the cluster
// is made from a kubeadm config file instead of flags: it carries the KubeletConfiguration
// document the upstream kubelet needs on this host (kubeadmUpstreamConfig), as an operator's
// would; the flags' settings are the file's nodeRegistration and skipPhases.
func kubeadmInitArgs(t *testing.T, env kubeadmEnv, cp *kubeadmNode) []string {
	t.Helper()
	if env.upstream != "" {
		return []string{"init", "--config", kubeadmUpstreamConfig(t, cp), "--v", "1"}
	}
	return []string{"init",
		"--kubernetes-version", kubeadmVersion,
		"--cri-socket", cp.rt.Endpoint,
		"--node-name", kubeadmCPName,
		"--skip-phases", kubeadmSkipPhases,
		// This VM is cgroup v1 (SystemVerification), has no conntrack/socat/crictl and no systemd;
		// the same flag is needed with the upstream kubelet here (NOTES.md).
		"--ignore-preflight-errors", "all",
		"--v", "1"}
}

// kubeadmReset runs `kubeadm reset -f` as on a systemd host: the kubelet is stopped first (reset's
// own `systemctl stop kubelet` finds no systemd here). Then nothing kubeadm wrote may be left.
func kubeadmReset(t *testing.T, env kubeadmEnv, n *kubeadmNode) {
	t.Helper()
	n.kubelet.Stop()
	if out, err := n.host.Run(5*time.Minute, env.kubeadm, "reset", "-f", "--cri-socket", n.rt.Endpoint); err != nil {
		t.Fatalf("kubeadm reset on %s: %v\n%s", n.name, err, out)
	}
	for _, dir := range []string{"/etc/kubernetes/manifests", "/var/lib/etcd", "/var/lib/kubelet"} {
		entries, err := os.ReadDir(n.host.Path(dir))
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("after reset on %s: %s: %v", n.name, dir, err)
		}
		if len(entries) > 0 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("after reset on %s: %s still holds %v", n.name, dir, names)
		}
	}
	if out, err := n.rt.Ctr("containers", "ls", "-q"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("after reset on %s: containers left in the runtime (err %v):\n%s", n.name, err, out)
	}
}

// kubeadmWorker is how a worker joins: its node name, host name, the link to the control-plane
// node (its name there and the /30's two addresses) and its agent.
type kubeadmWorker struct {
	node, host         string
	link, cpIP, nodeIP string
	agent, agentName   string
}

// kubeadmJoinNode joins a worker to cp's cluster with a bootstrap token from `kubeadm token create
// --print-join-command`: its own namespaces (network too, linked to cp's by a veth pair),
// containerd and root dir. It must go Ready, with its veth address as InternalIP and a client
// certificate bootstrapped from the token. It logs the time from kubeadm join's start, and from
// the agent's start, to the node Ready in the API.
func kubeadmJoinNode(t *testing.T, env kubeadmEnv, cp *kubeadmNode, kubectl func(...string) (string, error), wk kubeadmWorker) *kubeadmNode {
	t.Helper()
	w := newKubeadmNode(t, wk.host, wk.agent, wk.agentName, false, func(h *framework.Host) {
		h.Link(cp.host, wk.link, wk.cpIP, wk.nodeIP)
	})
	name := wk.node

	join, err := cp.host.Run(time.Minute, env.kubeadm, "token", "create", "--print-join-command")
	if err != nil {
		t.Fatalf("kubeadm token create: %v\n%s", err, join)
	}
	args := strings.Fields(strings.TrimSpace(join))
	if len(args) < 3 || args[0] != "kubeadm" || args[1] != "join" {
		t.Fatalf("kubeadm token create printed %q", join)
	}
	args = append(args[1:], "--cri-socket", w.rt.Endpoint, "--node-name", name,
		"--ignore-preflight-errors", "all", "--v", "1")
	start := time.Now()
	out := kubeadmRun(t, env, w, 10*time.Minute, args...)
	if !strings.Contains(out, "This node has joined the cluster") {
		t.Errorf("kubeadm join did not say the node joined:\n%s", out)
	}
	// Why the node was not Ready while it waited, in the agent's own words (its Ready condition).
	var notReady []string
	poll.Until(t, 4*time.Minute, time.Second, "node "+name+" Ready", func() (bool, string) {
		out, err := kubectl("get", "node", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
		status, msg, _ := strings.Cut(strings.TrimSpace(out), " ")
		if err == nil && status != "True" && msg != "" && !slices.Contains(notReady, msg) {
			notReady = append(notReady, msg)
		}
		return err == nil && status == "True", out
	})
	now := time.Now()
	t.Logf("MEASURE kubeadm join start -> node Ready (%s): %.1f s", wk.agentName, now.Sub(start).Seconds())
	t.Logf("MEASURE kubeadm join: agent start -> node Ready (%s): %.1f s", wk.agentName, now.Sub(w.agentStarted).Seconds())
	if created, err := kubectl("get", "node", name, "-o", "jsonpath={.metadata.creationTimestamp}"); err == nil {
		if ts, err := time.Parse(time.RFC3339, strings.TrimSpace(created)); err == nil {
			t.Logf("MEASURE kubeadm join: agent start -> Node registered (%s, 1 s resolution): %.0f s", wk.agentName, ts.Sub(w.agentStarted.Truncate(time.Second)).Seconds())
		}
	}
	t.Logf("node %s's Ready condition while not Ready (%s): %q", name, wk.agentName, notReady)

	// Bootstrapped with the token: the client certificate came from a CSR.
	kubeadmCheckClientCert(t, w, name, cp.host.Path("/etc/kubernetes/pki/ca.crt"))
	if ip, _ := kubectl("get", "node", name, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`); ip != wk.nodeIP {
		t.Errorf("joined node's InternalIP = %q, want %s", ip, wk.nodeIP)
	}
	return w
}

// kubeadmJoin joins a second nodelet node to cp's cluster (kubeadmJoinNode). A Deployment with one
// pod per node runs on both; kubectl logs and exec work on both.
func kubeadmJoin(t *testing.T, env kubeadmEnv, cp *kubeadmNode, kubectl func(...string) (string, error), third int) *kubeadmNode {
	const name = "kadm-w1"
	w := kubeadmJoinNode(t, env, cp, kubectl, kubeadmWorker{
		node: name, host: "w1",
		link: "eth1", cpIP: fmt.Sprintf("10.111.%d.1", third), nodeIP: fmt.Sprintf("10.111.%d.2", third),
		agent: env.nodelet, agentName: "nodelet",
	})

	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: kadm-spread, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: kadm-spread}}
  template:
    metadata: {labels: {app: kadm-spread}}
    spec:
      tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: kadm-spread}}}
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: docker.io/library/busybox:1.35
        command: ["sh", "-c", "echo hello from $(hostname); exec sleep 3600"]
`
	path := filepath.Join(t.TempDir(), "deploy.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl("apply", "-f", path); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	pods := map[string]string{} // node -> pod
	poll.Until(t, 3*time.Minute, time.Second, "the Deployment's pods Running on both nodes", func() (bool, string) {
		out, err := kubectl("get", "pods", "-l", "app=kadm-spread", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}`)
		if err != nil {
			return false, out
		}
		clear(pods)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[2] == "Running" {
				pods[f[1]] = f[0]
			}
		}
		return pods[kubeadmCPName] != "" && pods[name] != "", out
	})
	for node, pod := range pods {
		poll.Until(t, time.Minute, time.Second, "kubectl logs "+pod+" on "+node, func() (bool, string) {
			out, err := kubectl("logs", pod)
			return err == nil && strings.Contains(out, "hello from "+pod), out
		})
		poll.Until(t, time.Minute, time.Second, "kubectl exec "+pod+" on "+node, func() (bool, string) {
			out, err := kubectl("exec", pod, "--", "hostname")
			return err == nil && strings.TrimSpace(out) == pod, out
		})
	}
	if out, err := kubectl("delete", "deployment", "kadm-spread", "--wait=false"); err != nil {
		t.Errorf("delete deployment: %v\n%s", err, out)
	}
	return w
}

// kubeadmCheckClientCert checks the client certificate a joined node bootstrapped:
// kubelet-client-current.pem is the symlink to a pair (certificate and key in one file) for
// system:node:<node> in system:nodes, signed by the cluster CA (caFile). The link's target is an
// absolute path in the node's view (as the upstream kubelet's store writes it), so it is resolved
// there, not through /proc/<pid>/root, where an absolute target would point into the machine's /.
func kubeadmCheckClientCert(t *testing.T, n *kubeadmNode, node, caFile string) {
	t.Helper()
	const link = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	target, err := os.Readlink(n.host.Path(link))
	if err != nil {
		t.Errorf("joined node has no %s symlink: %v", link, err)
		return
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(link), target)
	}
	pair, err := os.ReadFile(n.host.Path(target))
	if err != nil {
		t.Errorf("joined node's %s -> %s: %v", link, target, err)
		return
	}
	var cert *x509.Certificate
	var hasKey bool
	for rest := pair; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE" && cert == nil:
			if cert, err = x509.ParseCertificate(b.Bytes); err != nil {
				t.Errorf("%s: %v", target, err)
				return
			}
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			hasKey = true
		}
	}
	if cert == nil || !hasKey {
		t.Errorf("%s holds no certificate and key (certificate %v, key %v)", target, cert != nil, hasKey)
		return
	}
	if want := "system:node:" + node; cert.Subject.CommonName != want || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("%s is for %v, want CN=%s, O=system:nodes", target, cert.Subject, want)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("%s is not a client certificate of the cluster CA: %v", target, err)
	}
}

func kubeadmNodeReady(t *testing.T, kubectl func(...string) (string, error), node string) {
	t.Helper()
	poll.Until(t, 3*time.Minute, time.Second, "node "+node+" Ready", func() (bool, string) {
		out, err := kubectl("get", "node", node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && strings.TrimSpace(out) == "True", out
	})
}

// kubeadmCheckPod runs a busybox pod on node (tolerating the control-plane taint) and reads its
// logs and execs into it through the API server, which dials nodelet's node API.
func kubeadmCheckPod(t *testing.T, kubectl func(...string) (string, error), name, node string) {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "echo hello from %s; exec sleep 3600"]
`, name, node, name)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	// The default ServiceAccount appears once kube-controller-manager's controller has run.
	poll.Until(t, 2*time.Minute, time.Second, "pod "+name+" created", func() (bool, string) {
		out, err := kubectl("apply", "-f", path)
		return err == nil, out
	})
	poll.Until(t, 3*time.Minute, time.Second, "pod "+name+" Running on "+node, func() (bool, string) {
		out, err := kubectl("get", "pod", name, "-o", "jsonpath={.status.phase} {.spec.nodeName}")
		return err == nil && out == "Running "+node, out
	})
	poll.Until(t, time.Minute, time.Second, "kubectl logs "+name, func() (bool, string) {
		out, err := kubectl("logs", name)
		return err == nil && strings.Contains(out, "hello from "+name), out
	})
	poll.Until(t, time.Minute, time.Second, "kubectl exec "+name, func() (bool, string) {
		out, err := kubectl("exec", name, "--", "cat", "/proc/1/cmdline")
		return err == nil && strings.Contains(out, "sleep"), out
	})
}

func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
