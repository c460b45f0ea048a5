//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestClusterNodeDebugEndpoints reaches the operator endpoints of the node
// API the way operators do, through the API server's node proxy:
// /configz shows the configuration in effect, /runningpods/ what the
// runtime runs, /debug/pprof Go's profiles, and /checkpoint either writes
// the archive or says the runtime cannot (containerd 1.6 here).
func TestClusterNodeDebugEndpoints(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	port := framework.FreePort(t)
	// The API server's node proxy refuses loopback node addresses: the
	// node is on the host's own address.
	ip := framework.HostIP(t)
	// The node log query is a config file field only.
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
enableSystemLogQuery: true
authentication: {webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A log file of the node's, in the directory upstream serves.
	logName := fmt.Sprintf("nodelet-e2e-%d", time.Now().UnixNano())
	logFile := filepath.Join("/var/log", logName+".log")
	if err := os.WriteFile(logFile, []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(logFile) })
	n := framework.StartNodelet(t, rt, "--config", config,
		"--kubeconfig", cluster.NodeKubeconfig,
		"--client-ca-file", cluster.CAFile,
		"--node-ip", ip, "--address", ip, "--port", strconv.Itoa(port),
		"--max-pods", "77",
	)
	cpWaitNode(t, admin)
	const pod = "nodeapi"
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: "busybox:1.35", command: ["sleep", "3600"]}
`, pod, framework.NodeName)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cpWaitPod(t, admin, pod, 90*time.Second, "running", cpRunningInAPI)

	proxy := "/api/v1/nodes/" + framework.NodeName + "/proxy"
	for _, tc := range []struct{ path, want string }{
		{"/configz", `"kubeletconfig":{`},
		{"/configz", `"maxPods":77`},
		{"/configz", fmt.Sprintf(`"port":%d`, port)},
		{"/runningpods/", `"name":"` + pod + `"`},
		// The image as the runtime lists it (containerd: the image ID), as upstream shows it.
		{"/runningpods/", `"containers":[{"name":"app","image":"`},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile: total"},
		{"/logs/", `<a href="` + logName + `.log">`},
		{"/logs/" + logName + ".log", "second line"},
		{"/logs/?query=/" + logName + ".log", "second line"},
		{"/logs/?query=" + logName, "second line"}, // a service's log found in <name>.log
		{"/configz", `"enableSystemLogQuery":true`},
	} {
		out, err := cluster.Kubectl("get", "--raw", proxy+tc.path)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl get --raw %s: %v: %.400q, want %q in it", tc.path, err, out, tc.want)
		}
	}

	// The log verbosity, changed as upstream's operators do it.
	level := filepath.Join(t.TempDir(), "v")
	if err := os.WriteFile(level, []byte("5"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Kubectl("replace", "--raw", proxy+"/debug/flags/v", "-f", level); err != nil || !strings.Contains(out, "verbosity to 5") {
		t.Errorf("PUT /debug/flags/v: %v: %q", err, out)
	}

	// Nothing outside /var/log: the query's file path is cleaned into the
	// directory, where it does not exist.
	if out, err := cluster.Kubectl("get", "--raw", proxy+"/logs/?query=%2F..%2F..%2Fetc%2Fpasswd"); err == nil || strings.Contains(out, "root:") {
		t.Errorf("query for /../../etc/passwd: %v: %.200q, want a refusal", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body, err := admin.CoreV1().RESTClient().Post().AbsPath(proxy, "checkpoint", "default", pod, "app").Do(ctx).Raw()
	switch {
	case err == nil:
		if !strings.Contains(string(body), n.RootDir+"/checkpoints/checkpoint-"+pod+"_default-app-") {
			t.Errorf("checkpoint: %s, want the archive's path under the root dir", body)
		}
	case apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "not supported by the container runtime"):
		t.Errorf("checkpoint: %v, want an archive or 'not supported by the container runtime'", err)
	default:
		t.Logf("checkpoint on this runtime: %v", err)
	}
}
