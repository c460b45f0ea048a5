//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestProbeHandlerVariants points readiness probes of idle containers at
// e2e/testdata/probeserver, which runs in the same pod: HTTPS without
// certificate verification, a same-host redirect, an off-host redirect (a
// success with a ProbeWarning), an endless body and h2c pass; a server that
// never answers costs the timeout, HTTP2 against an HTTP/1.1-only server
// fails; gRPC in TLS mode passes where plaintext fails. A second pod's
// liveness probe kills its container with the probe's own
// terminationGracePeriodSeconds (2 s), not the pod's hour: the container
// ignores SIGTERM, so only the probe's grace lets it restart in time.
func TestProbeHandlerVariants(t *testing.T) {
	rt := framework.StartRuntime(t)
	rootfs := t.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(rootfs, "probeserver"), "./e2e/testdata/probeserver")
	cmd.Dir = framework.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build probeserver: %v\n%s", err, out)
	}
	if out, err := rt.MakeImage("--name", "example.com/probeserver:1", "--root", rootfs, "--cmd", `["/probeserver"]`); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	n := framework.StartNodelet(t, rt)

	probes := []struct {
		name  string
		probe string
		ready bool
	}{
		{"https", `httpGet: {scheme: HTTPS, port: 8443, path: /ok}`, true},
		{"redirect", `httpGet: {port: 8080, path: /redirect}`, true},
		{"offhost", `httpGet: {port: 8080, path: /offhost}`, true},
		{"endless", `httpGet: {port: 8080, path: /endless}`, true},
		{"hang", `httpGet: {port: 8080, path: /hang}`, false},
		{"h2c", `httpGet: {port: 8081, path: /ok, protocol: HTTP2}`, true},
		{"h2c-on-h1", `httpGet: {port: 8080, path: /ok, protocol: HTTP2}`, false},
		{"grpc-tls", `grpc: {port: 5443, mode: TLS}`, true},
		{"grpc-plain", `grpc: {port: 5443}`, false},
	}
	var b strings.Builder
	b.WriteString(`apiVersion: v1
kind: Pod
metadata:
  name: variants
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: example.com/probeserver:1
    command: ["/probeserver", "8080", "8443", "8081", "5443"]
`)
	for _, p := range probes {
		fmt.Fprintf(&b, `  - name: %s
    image: busybox:1.35
    command: ["sleep", "3600"]
    readinessProbe:
      %s
      periodSeconds: 1
      timeoutSeconds: 1
`, p.name, p.probe)
	}
	n.WriteManifest("variants.yaml", b.String())
	n.WriteManifest("grace.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: probe-grace
spec:
  terminationGracePeriodSeconds: 3600
  containers:
  - name: app
    image: busybox:1.35
    command: ["sleep", "3600"]
    livenessProbe:
      tcpSocket: {port: 9}
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 2
`)

	name := "variants" + staticSuffix
	p := n.WaitPod(name, 90*time.Second, "every probe settled", func(p *v1.Pod) bool {
		if !framework.Running(p) {
			return false
		}
		for _, pr := range probes {
			cs := framework.ContainerStatus(p, pr.name)
			if cs == nil || cs.State.Running == nil || cs.Ready != pr.ready {
				return false
			}
		}
		return true
	})
	for _, pr := range probes {
		if cs := framework.ContainerStatus(p, pr.name); cs.RestartCount != 0 {
			t.Errorf("%s restarted %d times by a readiness probe", pr.name, cs.RestartCount)
		}
	}
	// The redirect's body ends with a newline: klog writes the message on
	// the lines after the event's.
	waitLog(t, n, 30*time.Second,
		`reason="ProbeWarning" message=<`, `Readiness probe warning: Probe terminated redirects, Response body: `,
		`Client.Timeout exceeded while awaiting headers`,
	)

	n.WaitPod("probe-grace"+staticSuffix, 90*time.Second, "restarted within the probe's grace period", func(p *v1.Pod) bool {
		cs := framework.ContainerStatus(p, "app")
		return cs != nil && cs.RestartCount >= 1
	})
}
