//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// TestClusterDownwardAPIVolume: a downwardAPI volume and a projected one
// with resourceFieldRef files (a limit, a request with a divisor, a limit
// that is not set reading the node's allocatable CPUs), and a label and an
// annotation changed on the running pod reaching the files the container
// reads.
func TestClusterDownwardAPIVolume(t *testing.T) {
	cluster, admin, n := configCluster(t)
	ctx := context.Background()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: downward-pod
  namespace: default
  labels: {app: web}
  annotations: {note: first}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "while true; do echo \"LABELS[$(cat /etc/podinfo/labels | tr '\\n' ' ')] NOTE[$(cat /etc/projected/note)]\"; sleep 1; done"]
    resources:
      limits: {memory: 64Mi}
      requests: {cpu: 250m, memory: 32Mi}
    volumeMounts:
    - {name: podinfo, mountPath: /etc/podinfo}
    - {name: projected, mountPath: /etc/projected}
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
      - path: mem_limit
        resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}
  - name: projected
    projected:
      sources:
      - downwardAPI:
          items:
          - path: note
            fieldRef: {fieldPath: "metadata.annotations['note']"}
          - path: cpu_request
            resourceFieldRef: {containerName: app, resource: requests.cpu, divisor: 1m}
          - path: cpu_limit
            resourceFieldRef: {containerName: app, resource: limits.cpu}
`, framework.NodeName)
	if out, err := cluster.KubectlInput(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	p := cpWaitPod(t, admin, "downward-pod", 60*time.Second, "Running", cpRunningInAPI)
	file := func(vol, name string) string {
		t.Helper()
		for i := range p.Spec.Volumes {
			if v := &p.Spec.Volumes[i]; v.Name == vol {
				dir, _ := criconfig.APIVolumePath(n.RootDir, p.UID, v)
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatalf("%s/%s: %v", vol, name, err)
				}
				return string(b)
			}
		}
		t.Fatalf("no volume %q", vol)
		return ""
	}
	for _, c := range []struct{ vol, name, want string }{
		{"podinfo", "mem_limit", "64"},
		{"projected", "cpu_request", "250"},
		{"projected", "cpu_limit", fmt.Sprint(runtime.NumCPU())},
	} {
		if got := file(c.vol, c.name); got != c.want {
			t.Errorf("%s/%s = %q, want %q", c.vol, c.name, got, c.want)
		}
	}

	logFile := filepath.Join(criconfig.PodLogDir(n.LogDir, "default", p.Name, p.UID), criconfig.ContainerLogPath("app", 0))
	seen := func(want string) func() (bool, string) {
		return func() (bool, string) {
			b, _ := os.ReadFile(logFile)
			log := criLogText(string(b))
			return strings.Contains(log, want), log
		}
	}
	poll.Within(t, 30*time.Second, "the first labels in the log", seen(`LABELS[app="web"] NOTE[first]`))

	begin := time.Now()
	patch := `{"metadata":{"labels":{"tier":"front"},"annotations":{"note":"second"}}}`
	if _, err := admin.CoreV1().Pods("default").Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Well inside the provider's one-minute resync: the pod update itself
	// must rewrite the files.
	poll.Within(t, 30*time.Second, "the changed label and annotation in the container", seen(`LABELS[app="web" tier="front"] NOTE[second]`))
	t.Logf("measured: label and annotation patched -> seen in the container's downwardAPI files: %s", time.Since(begin).Round(10*time.Millisecond))
}
