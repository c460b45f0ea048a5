//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// probePod is a static pod on the pod network (probes go to its own IP)
// with one container whose spec tail (probes, ports) is extra.
func probePod(name, script, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", %q]
%s`, name, script, extra)
}

func podCondition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	if p == nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// appReady: container app runs and is ready (or not, as want), and the
// pod's Ready condition agrees.
func appReady(want bool) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		cs := framework.ContainerStatus(p, "app")
		wantCond := v1.ConditionFalse
		if want {
			wantCond = v1.ConditionTrue
		}
		return cs != nil && cs.State.Running != nil && cs.Ready == want &&
			podCondition(p, v1.ContainersReady) == wantCond && podCondition(p, v1.PodReady) == wantCond
	}
}

// execIn runs cmd in the pod's container app through the runtime.
func execIn(t *testing.T, client *cri.Client, p *v1.Pod, cmd ...string) {
	t.Helper()
	id := strings.TrimPrefix(framework.ContainerStatus(p, "app").ContainerID, "containerd://")
	resp, err := client.ExecSync(context.Background(), id, cmd, 10*time.Second)
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec %v: %v %+v", cmd, err, resp)
	}
}

// probeCount sums the prober_probe_total series of /metrics/probes whose
// labels contain every one of labels.
func probeCount(t *testing.T, c nodeClient, labels ...string) int {
	t.Helper()
	total := 0
	for _, line := range strings.Split(c.get(t, "/metrics/probes"), "\n") {
		if !strings.HasPrefix(line, "prober_probe_total{") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("/metrics/probes line %q: %v", line, err)
		}
		total += int(v)
	}
	return total
}

// waitLog waits until the nodelet log has every one of wants.
func waitLog(t *testing.T, n *framework.Nodelet, timeout time.Duration, wants ...string) {
	t.Helper()
	poll.Within(t, timeout, fmt.Sprintf("nodelet log lines %q", wants), func() (bool, string) {
		log := n.Log()
		for _, w := range wants {
			if !strings.Contains(log, w) {
				return false, fmt.Sprintf("no %q", w)
			}
		}
		return true, ""
	})
}

func TestProbesStandalone(t *testing.T) {
	rt := framework.StartRuntime(t)
	// The node API, for the probe counters.
	caFile, cert := clientPKI(t, t.TempDir())
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt, "--port", strconv.Itoa(port), "--address", "127.0.0.1", "--client-ca-file", caFile,
		"--authentication-token-webhook=false", "--authorization-mode", "AlwaysAllow")
	probes := nodeClient{base: fmt.Sprintf("https://127.0.0.1:%d", port), cert: &cert}
	client := framework.CRIClient(t, rt)

	n.WriteManifest("exec.yaml", probePod("exec-ready", "touch /tmp/ready; exec sleep 3600", `    readinessProbe:
      exec: {command: ["cat", "/tmp/ready"]}
      periodSeconds: 1
      failureThreshold: 1
`))
	n.WriteManifest("http.yaml", probePod("http-live", "mkdir -p /www; echo ok > /www/healthz; exec httpd -f -p 8080 -h /www", `    ports: [{name: web, containerPort: 8080}]
    livenessProbe:
      httpGet: {path: /healthz, port: web, httpHeaders: [{name: Host, value: probe.example}]}
      periodSeconds: 1
      failureThreshold: 2
`))
	n.WriteManifest("tcp.yaml", probePod("tcp-ready", "mkdir -p /www; exec httpd -f -p 9090 -h /www", `    readinessProbe:
      tcpSocket: {port: 9090}
      periodSeconds: 1
`))
	n.WriteManifest("closed.yaml", probePod("tcp-closed", "exec sleep 3600", `    readinessProbe:
      tcpSocket: {port: 9999}
      periodSeconds: 1
      timeoutSeconds: 1
`))
	t.Run("ExecReadiness", func(t *testing.T) {
		name := "exec-ready" + staticSuffix
		p := n.WaitPod(name, 60*time.Second, "ready", appReady(true))
		execIn(t, client, p, "rm", "/tmp/ready")
		n.WaitPod(name, 30*time.Second, "not ready after its probe fails", appReady(false))
		execIn(t, client, p, "touch", "/tmp/ready")
		p = n.WaitPod(name, 30*time.Second, "ready again", appReady(true))
		if rc := framework.ContainerStatus(p, "app").RestartCount; rc != 0 {
			t.Fatalf("a readiness probe restarted the container (%d restarts)", rc)
		}
		// klog writes a multi-line message (the exec output ends with a
		// newline) on the lines after the event's.
		waitLog(t, n, 10*time.Second, `reason="Unhealthy" message=<`, `Readiness probe failed: cat: can't open '/tmp/ready': No such file or directory`)
	})

	t.Run("HTTPLivenessRestarts", func(t *testing.T) {
		name := "http-live" + staticSuffix
		p := n.WaitPod(name, 60*time.Second, "running and ready", appReady(true))
		first := framework.ContainerStatus(p, "app").ContainerID
		execIn(t, client, p, "rm", "/www/healthz")
		p = n.WaitPod(name, 60*time.Second, "restarted after failed liveness probes", func(p *v1.Pod) bool {
			cs := framework.ContainerStatus(p, "app")
			return cs != nil && cs.RestartCount == 1 && cs.ContainerID != first && cs.State.Running != nil
		})
		waitLog(t, n, 10*time.Second,
			`reason="Unhealthy" message="Liveness probe failed: HTTP probe failed with statuscode: 404"`,
			`reason="Killing" message="Container app failed liveness probe, will be restarted"`)
		// The new instance serves /healthz again: it stays up.
		second := framework.ContainerStatus(p, "app").ContainerID
		n.WaitPod(name, 30*time.Second, "new instance ready", appReady(true))
		// Three more liveness probes pass (more than failureThreshold, 2):
		// the new instance is still the one running after them.
		passed := func() int {
			return probeCount(t, probes, `container="app"`, `pod="`+name+`"`, `probe_type="Liveness"`, `result="successful"`)
		}
		before := passed()
		poll.Within(t, 30*time.Second, "3 more successful liveness probes", func() (bool, string) {
			return passed() >= before+3, ""
		})
		if p, _ := n.Pod(name); framework.ContainerStatus(p, "app").ContainerID != second {
			t.Fatal("the healthy new instance was restarted too")
		}
	})

	t.Run("TCPReadiness", func(t *testing.T) {
		n.WaitPod("tcp-ready"+staticSuffix, 60*time.Second, "ready (port open)", appReady(true))
		p := n.WaitPod("tcp-closed"+staticSuffix, 60*time.Second, "running, not ready (port closed)", appReady(false))
		waitLog(t, n, 30*time.Second, `reason="Unhealthy" message="Readiness probe failed: dial tcp `+p.Status.PodIP+`:9999: connect: connection refused"`)
	})

	t.Run("HangingExecProbeTimesOut", func(t *testing.T) {
		n.WriteManifest("hang.yaml", probePod("exec-hang", "exec sleep 3600", `    livenessProbe:
      exec: {command: ["sleep", "30"]}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
`))
		n.WaitPod("exec-hang"+staticSuffix, 60*time.Second, "restarted after its liveness probe timed out", func(p *v1.Pod) bool {
			cs := framework.ContainerStatus(p, "app")
			return cs != nil && cs.RestartCount >= 1
		})
		waitLog(t, n, 10*time.Second, `message="Liveness probe failed: command \"sleep 30\" timed out"`)
	})

	t.Run("StartupGatesReadiness", func(t *testing.T) {
		// The startup probe passes once the test creates the file; the
		// readiness probe would pass on the same file, so a readiness
		// probe run too early shows as a failure in the log.
		n.WriteManifest("startup.yaml", probePod("startup", "exec sleep 3600", `    startupProbe:
      exec: {command: ["cat", "/tmp/started"]}
      periodSeconds: 1
      failureThreshold: 600
    readinessProbe:
      exec: {command: ["cat", "/tmp/started"]}
      periodSeconds: 1
`))
		name := "startup" + staticSuffix
		p := n.WaitPod(name, 60*time.Second, "running", framework.Running)
		waitLog(t, n, 30*time.Second, `Startup probe failed: cat: can't open '/tmp/started'`)
		p, _ = n.Pod(name)
		cs := framework.ContainerStatus(p, "app")
		if cs.Started == nil || *cs.Started || cs.Ready || podCondition(p, v1.PodReady) != v1.ConditionFalse {
			t.Fatalf("before its startup probe passed: started %v ready %v, pod Ready %s", cs.Started, cs.Ready, podCondition(p, v1.PodReady))
		}
		execIn(t, client, p, "touch", "/tmp/started")
		n.WaitPod(name, 60*time.Second, "started and ready", func(p *v1.Pod) bool {
			cs := framework.ContainerStatus(p, "app")
			return cs != nil && cs.Started != nil && *cs.Started && appReady(true)(p)
		})
		for _, l := range strings.Split(n.Log(), "\n") {
			if strings.Contains(l, `"Probe failed" probeType="Readiness" pod="default/`+name+`"`) {
				t.Fatalf("the readiness probe ran before the startup probe passed: %s", l)
			}
		}
	})
}

// TestProbeGRPC probes a gRPC health server (e2e/testdata/grpchealth, built
// into a one-file image): the service that is SERVING makes its container
// ready, the one that is NOT_SERVING keeps its container not ready.
func TestProbeGRPC(t *testing.T) {
	rt := framework.StartRuntime(t)
	rootfs := t.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(rootfs, "grpchealth"), "./e2e/testdata/grpchealth")
	cmd.Dir = framework.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build grpchealth: %v\n%s", err, out)
	}
	if out, err := rt.MakeImage("--name", "example.com/grpchealth:1", "--root", rootfs, "--cmd", `["/grpchealth", "5000"]`); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	caFile, cert := clientPKI(t, t.TempDir())
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt, "--port", strconv.Itoa(port), "--address", "127.0.0.1", "--client-ca-file", caFile,
		"--authentication-token-webhook=false", "--authorization-mode", "AlwaysAllow")
	n.WriteManifest("grpc.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: grpc
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: serving
    image: example.com/grpchealth:1
    command: ["/grpchealth", "5000"]
    readinessProbe:
      grpc: {port: 5000}
      periodSeconds: 1
  - name: down
    image: example.com/grpchealth:1
    command: ["/grpchealth", "5001"]
    readinessProbe:
      grpc: {port: 5001, service: down}
      periodSeconds: 1
`)
	name := "grpc" + staticSuffix
	n.WaitPod(name, 60*time.Second, "serving ready, down not ready", func(p *v1.Pod) bool {
		s, d := framework.ContainerStatus(p, "serving"), framework.ContainerStatus(p, "down")
		return framework.Running(p) && s.Ready && !d.Ready && podCondition(p, v1.PodReady) == v1.ConditionFalse
	})
	waitLog(t, n, 30*time.Second, `message="Readiness probe failed: service unhealthy (responded with \"NOT_SERVING\")"`)

	// The node API serves the probe counters with upstream's names and labels.
	metrics := nodeClient{base: fmt.Sprintf("https://127.0.0.1:%d", port), cert: &cert}.get(t, "/metrics/probes")
	for _, want := range []string{
		`prober_probe_total{container="serving",namespace="default",pod="` + name + `",pod_uid="`,
		`probe_type="Readiness",result="successful"}`,
		`prober_probe_total{container="down",namespace="default",pod="` + name + `",pod_uid="`,
		`probe_type="Readiness",result="failed"}`,
		`prober_probe_duration_seconds_bucket{container="serving",namespace="default",pod="` + name + `",probe_type="Readiness",le="`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics/probes has no %s:\n%s", want, metrics)
		}
	}
}
