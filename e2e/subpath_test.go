//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/layout"
)

// TestSubpathCannotEscape is the CVE-2017-1002101 regression test: an init
// container plants symlinks to /, to /etc and up a ".." chain in a shared
// emptyDir and in a hostPath; containers that mount them by subPath must fail
// with a clear error, and nothing of the node may ever be mounted. Legitimate
// subPaths (a directory, a file, a symlink that stays inside, a subPathExpr)
// work, and removing the pod leaves the hostPath's content alone although it
// was bind-mounted into the pod's directory.
func TestSubpathCannotEscape(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt)

	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "sentinel"), []byte("node data"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := strings.Join([]string{
		"set -e",
		"mkdir -p /shared/ok/a/b /host/data",
		"echo hello > /shared/ok/greeting",
		"ln -s / /shared/root",
		"ln -s /etc /shared/etc",
		"ln -s ../../../../../../../../.. /shared/ok/a/b/up",
		"ln -s ok/a /shared/inside",
		"ln -s / /host/root",
		"ln -s ../../../../../../etc /host/updir",
		"echo from-host > /host/data/file",
	}, "; ")
	traps := []struct{ name, volume, subPath string }{
		{"root", "shared", "root"},
		{"etc", "shared", "etc"},
		{"etc-file", "shared", "etc/passwd"},
		{"dotdot", "shared", "ok/a/b/up"},
		{"dotdot-etc", "shared", "ok/a/b/up/etc"},
		{"host-root", "host", "root"},
		{"host-updir", "host", "updir"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: subpath
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  volumes:
  - name: shared
    emptyDir: {}
  - name: host
    hostPath: {path: %q}
  initContainers:
  - name: plant
    image: busybox:1.35
    command: ["sh", "-c", %q]
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: host, mountPath: /host}
  containers:
  - name: legit
    image: busybox:1.35
    command: ["sh", "-c", "cat /dir/greeting /file; ls -d /inner/b; cat /host/file; sleep 3600"]
    env:
    - {name: SUB, value: data}
    volumeMounts:
    - {name: shared, mountPath: /dir, subPath: ok}
    - {name: shared, mountPath: /file, subPath: ok/greeting}
    - {name: shared, mountPath: /inner, subPath: inside}
    - {name: host, mountPath: /host, subPathExpr: "$(SUB)"}
`, host, plant)
	for _, tr := range traps {
		fmt.Fprintf(&b, `  - name: %s
    image: busybox:1.35
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: %s, mountPath: /mnt, subPath: %q}
`, tr.name, tr.volume, tr.subPath)
	}
	n.WriteManifest("subpath.yaml", b.String())

	name := "subpath" + staticSuffix
	p := n.WaitPod(name, 90*time.Second, "legit running, every trap refused", func(p *v1.Pod) bool {
		if c := framework.ContainerStatus(p, "legit"); c == nil || c.State.Running == nil {
			return false
		}
		for _, tr := range traps {
			c := framework.ContainerStatus(p, tr.name)
			if c == nil || c.State.Waiting == nil || c.State.Waiting.Reason != "CreateContainerConfigError" {
				return false
			}
		}
		return true
	})
	for _, tr := range traps {
		msg := framework.ContainerStatus(p, tr.name).State.Waiting.Message
		want := fmt.Sprintf(`volume mount %q: subPath %q resolves outside the volume`, tr.volume, tr.subPath)
		if !strings.Contains(msg, want) {
			t.Errorf("container %s: message %q, want it to contain %q", tr.name, msg, want)
		}
	}

	// The only subPath binds are the legit container's, and each shows
	// what is inside the volume, never the node.
	subpaths := layout.SubpathsDir(n.RootDir, p.UID)
	binds := mountsUnder(t, subpaths)
	if len(binds) != 4 {
		t.Errorf("subPath binds under %s: %v, want the legit container's 4", subpaths, binds)
	}
	for _, m := range binds {
		if !strings.Contains(m, "/legit/") {
			t.Errorf("unexpected bind %s", m)
		}
	}
	legitLog := criLogText(waitContainerLog(t, n, p, "legit", "from-host"))
	if want := "hello\nhello\n/inner/b\nfrom-host\n"; legitLog != want {
		t.Errorf("legit container read %q, want %q", legitLog, want)
	}

	// Removing the pod unmounts its binds before its directory goes; the
	// hostPath bound into it keeps its content.
	n.RemoveManifest("subpath.yaml")
	n.WaitPod(name, 60*time.Second, "pod gone", func(p *v1.Pod) bool { return p == nil })
	// The directory goes once the runtime has nothing of the pod left; do
	// container GC's part at once instead of waiting for it.
	client := framework.CRIClient(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sandboxes, err := client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if err := client.RemovePodSandbox(ctx, sb.Id); err != nil {
			t.Fatal(err)
		}
	}
	podDir := filepath.Join(n.RootDir, "pods", string(p.UID))
	poll.Within(t, 60*time.Second, "pod directory removed", func() (bool, string) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), fmt.Sprintf("stat %s: %v", podDir, err)
	})
	if left := mountsUnder(t, podDir); len(left) != 0 {
		t.Errorf("mounts left under the removed pod: %v", left)
	}
	for _, f := range []string{"sentinel", "data/file"} {
		if _, err := os.Stat(filepath.Join(host, f)); err != nil {
			t.Errorf("hostPath content lost with the pod: %v", err)
		}
	}
}

// mountsUnder lists the mount points below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	points, err := framework.MountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	return points
}

// criLogText returns the messages of a CRI log file's lines, without the
// time, stream and tag prefixes.
func criLogText(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		if parts := strings.SplitN(l, " ", 4); len(parts) == 4 {
			b.WriteString(parts[3] + "\n")
		}
	}
	return b.String()
}
