//go:build e2e

package e2e

import (
	"context"
	"fmt"
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
	n := framework.StartNodelet(t, rt,
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
	} {
		out, err := cluster.Kubectl("get", "--raw", proxy+tc.path)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl get --raw %s: %v: %.400q, want %q in it", tc.path, err, out, tc.want)
		}
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
