//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// The pod the node API tests talk to: a chatty container, a web server, a
// container that echoes its stdin (attach) and one that crashes and is
// restarted (logs --previous). It uses the CNI network, so port-forward
// goes into a network namespace of its own.
const apiPodManifest = `apiVersion: v1
kind: Pod
metadata:
  name: api
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: talker
    image: busybox:1.35
    command: ["sh", "-c", "echo started; i=0; while true; do echo tick $i; echo oops $i >&2; i=$((i+1)); sleep 0.2; done"]
  - name: web
    image: busybox:1.35
    command: ["sh", "-c", "mkdir /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www"]
  - name: reader
    image: busybox:1.35
    stdin: true
    command: ["sh", "-c", "while read l; do echo got:$l; done"]
  - name: crasher
    image: busybox:1.35
    command: ["sh", "-c", "echo run $(cat /proc/sys/kernel/random/uuid); sleep 4; exit 1"]
`

const apiPod = "api" + staticSuffix

// nodeClient talks HTTPS to a nodelet's node API with a client certificate
// and/or a bearer token.
type nodeClient struct {
	base  string
	cert  *tls.Certificate
	token string
}

func (c nodeClient) httpClient() *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true} // the node serves a self-signed certificate
	if c.cert != nil {
		cfg.Certificates = []tls.Certificate{*c.cert}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func (c nodeClient) do(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (c nodeClient) get(t *testing.T, path string) string {
	t.Helper()
	code, body := c.do(t, "GET", path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

// restConfig is what client-go's SPDY executor and port forwarder need.
func (c nodeClient) restConfig() *rest.Config {
	cfg := &rest.Config{Host: c.base, BearerToken: c.token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if c.cert != nil {
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Certificate[0]})
		keyDER, _ := x509.MarshalPKCS8PrivateKey(c.cert.PrivateKey)
		cfg.TLSClientConfig.CertData = certPEM
		cfg.TLSClientConfig.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	}
	return cfg
}

// exec runs a command through the node API's /exec, as the API server
// would: SPDY, v4 protocol with the exit code on the error stream.
func (c nodeClient) exec(t *testing.T, pod, container string, cmd []string, stdin io.Reader, tty bool, sizes remotecommand.TerminalSizeQueue) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = c.execTo(t, pod, container, cmd, stdin, &out, &errb, tty, sizes)
	return out.String(), errb.String(), err
}

// execTo is exec writing to the given writers as output arrives.
func (c nodeClient) execTo(t *testing.T, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, sizes remotecommand.TerminalSizeQueue) error {
	t.Helper()
	q := url.Values{"command": cmd, "output": {"1"}}
	if !tty {
		q.Set("error", "1")
	} else {
		q.Set("tty", "1")
	}
	if stdin != nil {
		q.Set("input", "1")
	}
	u, _ := url.Parse(fmt.Sprintf("%s/exec/default/%s/%s?%s", c.base, pod, container, q.Encode()))
	ex, err := remotecommand.NewSPDYExecutor(c.restConfig(), "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Tty: tty, TerminalSizeQueue: sizes}
	if !tty {
		opts.Stderr = stderr
	}
	return ex.StreamWithContext(ctx, opts)
}

// oneSize is a terminal that has one size.
type oneSize struct {
	once sync.Once
	size remotecommand.TerminalSize
}

func (s *oneSize) Next() *remotecommand.TerminalSize {
	var out *remotecommand.TerminalSize
	s.once.Do(func() { out = &s.size })
	if out == nil {
		select {} // no more resizes; the stream ends first
	}
	return out
}

// clientPKI makes a CA and a client certificate (O=system:masters) signed by
// it, writing the CA to dir for --client-ca-file.
func clientPKI(t *testing.T, dir string) (caFile string, client tls.Certificate) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key := newKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "e2e-admin", Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func containerRunning(p *v1.Pod, names ...string) bool {
	for _, n := range names {
		cs := framework.ContainerStatus(p, n)
		if cs == nil || cs.State.Running == nil {
			return false
		}
	}
	return true
}

// TestNodeAPIStandalone exercises every node API endpoint directly, as the
// API server would call them, against real containerd: authentication,
// logs (tail, limit, follow, previous), rotation, exec with exit codes and
// a TTY, attach, port-forward, run, stats and metrics.
func TestNodeAPIStandalone(t *testing.T) {
	rt := framework.StartRuntime(t)
	caFile, cert := clientPKI(t, t.TempDir())
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt,
		"--port", strconv.Itoa(port), "--address", "127.0.0.1",
		"--client-ca-file", caFile,
		"--authentication-token-webhook=false", "--authorization-mode", "AlwaysAllow",
		"--container-log-max-size", "4Ki", "--container-log-max-files", "3",
	)
	n.WriteManifest("api.yaml", apiPodManifest)
	p := n.WaitPod(apiPod, 90*time.Second, "talker, web and reader running", func(p *v1.Pod) bool {
		return containerRunning(p, "talker", "web", "reader")
	})
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	c := nodeClient{base: base, cert: &cert}

	t.Run("unauthenticated", func(t *testing.T) {
		_, otherCert := clientPKI(t, t.TempDir())
		for _, anon := range []nodeClient{{base: base}, {base: base, token: "anything"}, {base: base, cert: &otherCert}} {
			for _, path := range []string{"/pods", "/healthz", "/metrics", "/stats/summary",
				"/containerLogs/default/" + apiPod + "/talker", "/exec/default/" + apiPod + "/web?command=ls&output=1"} {
				if code, body := anon.do(t, "GET", path); code != http.StatusUnauthorized {
					t.Errorf("%s without valid credentials: %d %s", path, code, body)
				}
			}
		}
	})

	t.Run("pods and healthz", func(t *testing.T) {
		var list v1.PodList
		if err := json.Unmarshal([]byte(c.get(t, "/pods")), &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != apiPod {
			t.Errorf("/pods: %v %+v", err, list.Items)
		}
		if got := c.get(t, "/healthz"); got != "ok" {
			t.Errorf("/healthz: %q", got)
		}
	})

	logs := "/containerLogs/default/" + apiPod + "/talker"
	t.Run("logs", func(t *testing.T) {
		// Two seconds of output, so that sinceSeconds=1 leaves the start out.
		poll.Until(t, 30*time.Second, 100*time.Millisecond, "tick 10 in the logs", func() (bool, string) {
			return strings.Contains(c.get(t, logs), "tick 10\n"), ""
		})
		all := c.get(t, logs)
		// stdout and stderr are separate pipes: their first lines may come
		// in either order.
		if !strings.Contains(all, "started\n") || !strings.Contains(all, "tick 0\n") || !strings.Contains(all, "oops 0\n") {
			t.Errorf("logs start %.60q", all)
		}
		tail := c.get(t, logs+"?tailLines=2")
		if lines := strings.Split(strings.TrimSuffix(tail, "\n"), "\n"); len(lines) != 2 {
			t.Errorf("tailLines=2: %q", tail)
		}
		if got := c.get(t, logs+"?limitBytes=7"); got != all[:7] {
			t.Errorf("limitBytes=7: %q, want %q", got, all[:7])
		}
		stamped := c.get(t, logs+"?tailLines=1&timestamps=true")
		if ts, _, _ := strings.Cut(stamped, " "); !strings.HasSuffix(ts, "Z") {
			t.Errorf("timestamps: %q", stamped)
		} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("timestamps: %v", err)
		}
		if got := c.get(t, logs+"?sinceSeconds=1"); strings.Contains(got, "started") || !strings.Contains(got, "tick") {
			t.Errorf("sinceSeconds=1: %.80q", got)
		}
		if code, _ := c.do(t, "GET", "/containerLogs/default/"+apiPod+"/nope"); code != http.StatusNotFound {
			t.Errorf("unknown container: %d", code)
		}
		if code, _ := c.do(t, "GET", "/containerLogs/default/nope/talker"); code != http.StatusNotFound {
			t.Errorf("unknown pod: %d", code)
		}
	})

	t.Run("logs follow", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+logs+"?follow=true&tailLines=0", nil)
		resp, err := c.httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		var got string
		for strings.Count(got, "tick") < 3 {
			k, err := resp.Body.Read(buf)
			got += string(buf[:k])
			if err != nil {
				t.Fatalf("follow: %v after %q", err, got)
			}
		}
		if strings.Contains(got, "started") {
			t.Errorf("tailLines=0 showed old lines: %q", got)
		}
	})

	t.Run("logs previous", func(t *testing.T) {
		// While the second run runs, "previous" is the first one. (During a
		// back-off both name the last run, as upstream.)
		n.WaitPod(apiPod, 60*time.Second, "crasher running again", func(p *v1.Pod) bool {
			cs := framework.ContainerStatus(p, "crasher")
			return cs != nil && cs.RestartCount >= 1 && cs.State.Running != nil
		})
		// Running is not yet written to: wait for the new run's line.
		var cur string
		poll.Until(t, 10*time.Second, 50*time.Millisecond, "the running instance's log line", func() (bool, string) {
			cur = c.get(t, "/containerLogs/default/"+apiPod+"/crasher")
			return cur != "", fmt.Sprintf("%q", cur)
		})
		prev := c.get(t, "/containerLogs/default/"+apiPod+"/crasher?previous=true")
		if !strings.HasPrefix(prev, "run ") || !strings.HasPrefix(cur, "run ") || prev == cur {
			t.Errorf("previous %q, current %q: want two different runs", prev, cur)
		}
		if code, body := c.do(t, "GET", logs+"?previous=true"); code != http.StatusBadRequest {
			t.Errorf("previous of a container that never restarted: %d %s", code, body)
		}
	})

	t.Run("exec", func(t *testing.T) {
		out, errOut, err := c.exec(t, apiPod, "web", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, nil, false, nil)
		var exitErr utilexec.CodeExitError
		if !errors.As(err, &exitErr) || exitErr.Code != 3 {
			t.Errorf("exit status: %v, want code 3", err)
		}
		if out != "out\n" || errOut != "err\n" {
			t.Errorf("stdout %q stderr %q", out, errOut)
		}
		out, _, err = c.exec(t, apiPod, "web", []string{"cat"}, strings.NewReader("from stdin\n"), false, nil)
		if err != nil || out != "from stdin\n" {
			t.Errorf("stdin: %q %v", out, err)
		}
		if _, _, err := c.exec(t, apiPod, "crasher-does-not-exist", []string{"true"}, nil, false, nil); err == nil {
			t.Error("exec in an unknown container succeeded")
		}
	})

	t.Run("exec tty", func(t *testing.T) {
		// Typed as a person would: a command, wait for its answer, exit.
		sizes := &oneSize{size: remotecommand.TerminalSize{Width: 100, Height: 40}}
		pr, pw := io.Pipe()
		out := &watchBuffer{want: "42", found: make(chan struct{})}
		done := make(chan error, 1)
		go func() { done <- c.execTo(t, apiPod, "web", []string{"sh"}, pr, out, nil, true, sizes) }()
		pw.Write([]byte("stty size; echo $((6*7))\n"))
		select {
		case <-out.found:
		case err := <-done:
			t.Fatalf("exec ended early: %v (output %q)", err, out.String())
		case <-time.After(20 * time.Second):
			t.Fatalf("no answer from the shell: %q", out.String())
		}
		pw.Write([]byte("exit 5\n"))
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("exec did not end after exit")
		}
		pw.Close()
		var exitErr utilexec.CodeExitError
		if !errors.As(err, &exitErr) || exitErr.Code != 5 {
			t.Errorf("exit status: %v, want code 5", err)
		}
		got := out.String()
		if !strings.Contains(got, "40 100") {
			t.Errorf("tty output %q: want the terminal size 40 100", got)
		}
		if !strings.Contains(got, "\r\n") {
			t.Errorf("tty output %q has no terminal line endings", got)
		}
	})

	t.Run("attach", func(t *testing.T) {
		u, _ := url.Parse(base + "/attach/default/" + apiPod + "/reader?input=1&output=1&error=1")
		ex, err := remotecommand.NewSPDYExecutor(c.restConfig(), "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		pr, pw := io.Pipe()
		out := &watchBuffer{want: "got:hello", found: make(chan struct{})}
		done := make(chan error, 1)
		go func() {
			done <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stdout: out, Stderr: io.Discard})
		}()
		// Keep saying hello until the container answers: the attach may
		// not be connected yet when the first line is written.
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				pw.Write([]byte("hello\n"))
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
		select {
		case <-out.found:
		case err := <-done:
			t.Fatalf("attach ended: %v (output %q)", err, out.String())
		case <-ctx.Done():
			t.Fatalf("no answer through attach: %q", out.String())
		}
		cancel()
		pw.Close()
	})

	t.Run("port-forward", func(t *testing.T) {
		transport, upgrader, err := spdy.RoundTripperFor(c.restConfig())
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(base + "/portForward/default/" + apiPod)
		dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
		stop, ready := make(chan struct{}), make(chan struct{})
		defer close(stop)
		fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 1)
		go func() { errs <- fw.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-errs:
			t.Fatalf("port-forward: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("port-forward not ready")
		}
		ports, err := fw.GetPorts()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ { // two connections over one forward
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[0].Local))
			if err != nil {
				t.Fatalf("GET through port-forward: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "hello-from-pod\n" {
				t.Errorf("through port-forward: %d %q", resp.StatusCode, b)
			}
		}
	})

	t.Run("run", func(t *testing.T) {
		code, body := c.do(t, "POST", "/run/default/"+apiPod+"/web?command=echo&command=hi")
		if code != http.StatusOK || body != "hi\n" {
			t.Errorf("/run: %d %q", code, body)
		}
	})

	t.Run("stats", func(t *testing.T) {
		var s statsapi.Summary
		if err := json.Unmarshal([]byte(c.get(t, "/stats/summary")), &s); err != nil {
			t.Fatal(err)
		}
		if s.Node.NodeName != framework.NodeName || s.Node.CPU == nil || s.Node.Memory == nil || s.Node.Fs == nil || s.Node.Runtime == nil {
			t.Errorf("node stats %+v", s.Node)
		}
		var ps *statsapi.PodStats
		for i := range s.Pods {
			if s.Pods[i].PodRef.Name == apiPod {
				ps = &s.Pods[i]
			}
		}
		if ps == nil {
			t.Fatalf("pod missing from summary: %+v", s.Pods)
		}
		if ps.PodRef.UID != string(p.UID) || ps.CPU == nil || ps.Memory == nil || ps.Network == nil || ps.EphemeralStorage == nil {
			t.Errorf("pod stats %+v", ps)
		}
		names := map[string]statsapi.ContainerStats{}
		for _, cs := range ps.Containers {
			names[cs.Name] = cs
		}
		talker, ok := names["talker"]
		if !ok || talker.CPU == nil || talker.CPU.UsageCoreNanoSeconds == nil || talker.Memory == nil || talker.Rootfs == nil || talker.Logs == nil || *talker.Logs.UsedBytes == 0 {
			t.Errorf("talker stats %+v", talker)
		}

		var legacy statsapi.ContainerStats
		if err := json.Unmarshal([]byte(c.get(t, fmt.Sprintf("/stats/default/%s/%s/talker", apiPod, p.UID))), &legacy); err != nil {
			t.Fatal(err)
		}
		if legacy.Name != "talker" || !legacy.StartTime.Equal(&talker.StartTime) {
			t.Errorf("legacy stats %+v, summary start %v", legacy, talker.StartTime)
		}
		if code, _ := c.do(t, "GET", fmt.Sprintf("/stats/default/%s/not-the-uid/talker", apiPod)); code != http.StatusNotFound {
			t.Errorf("legacy stats with a wrong UID: %d", code)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		m := c.get(t, "/metrics")
		for _, want := range []string{"kubelet_running_pods 1", `kubelet_running_containers{container_state="running"}`,
			"kubelet_pod_start_duration_seconds_count", "kubelet_pod_worker_duration_seconds_count",
			`kubelet_runtime_operations_duration_seconds_count{operation_type="start_container"}`, "nodelet_http_requests_total"} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		r := c.get(t, "/metrics/resource")
		if !strings.Contains(r, `container_cpu_usage_seconds_total{container="talker",namespace="default",pod="`+apiPod+`"}`) {
			t.Errorf("/metrics/resource:\n%s", r)
		}
	})

	t.Run("log rotation", func(t *testing.T) {
		// talker writes ~80 bytes every 0.2 s; at 4Ki the log rotates about
		// every 10 s, checked every 10 s.
		dir := filepath.Join(n.LogDir, fmt.Sprintf("default_%s_%s", apiPod, p.UID), "talker")
		poll.Until(t, 60*time.Second, time.Second, "2 rotated log files", func() (bool, string) {
			files, _ := filepath.Glob(filepath.Join(dir, "0.log.*"))
			return len(files) >= 2, fmt.Sprint(files)
		})
		all, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(all) > 3 {
			t.Errorf("%d log files, want at most --container-log-max-files=3: %v", len(all), all)
		}
		// The current file is still read, and the runtime writes to it. Right
		// after a rotation it may still be empty (only the current file is
		// read, as upstream), so wait for the next line.
		var got string
		poll.Within(t, 10*time.Second, "a line in the current log file", func() (bool, string) {
			got = c.get(t, logs+"?tailLines=1")
			return got != "", ""
		})
		if !strings.HasPrefix(got, "oops") && !strings.HasPrefix(got, "tick") {
			t.Errorf("logs after rotation: %q", got)
		}
	})
}

// watchBuffer collects output and signals when want shows up.
type watchBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	want  string
	found chan struct{}
	once  sync.Once
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.found) })
	}
	return len(p), nil
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// kubectlPodManifest is apiPodManifest as an API pod bound to the node.
func kubectlPodManifest() string {
	m := strings.Replace(apiPodManifest, "spec:\n", "spec:\n  nodeName: "+framework.NodeName+"\n  automountServiceAccountToken: false\n", 1)
	return strings.Replace(m, "  name: api\n", "  name: api\n  namespace: default\n", 1)
}

// staticManifest is a static pod whose mirror pod the API server holds.
const staticManifest = `apiVersion: v1
kind: Pod
metadata:
  name: static
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: sleeper
    image: busybox:1.35
    command: ["sleep", "3600"]
`

// kubectlBin is the kubectl the cluster framework uses.
func kubectlBin() string {
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if _, err := os.Stat("/usr/bin/kubectl"); err == nil {
		return "/usr/bin/kubectl"
	}
	return filepath.Join(framework.RepoRoot(), "_output", "tools", "bin", "kubectl")
}

// kubectlCmd is a kubectl command with the admin kubeconfig, for the
// streaming commands Cluster.Kubectl cannot run (logs -f, attach,
// port-forward).
func kubectlCmd(ctx context.Context, c *framework.Cluster, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, kubectlBin(), append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
}

// kubeconfigToken returns the bearer token of a kubeconfig written by
// cluster-up.sh.
func kubeconfigToken(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == "token" {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no token in %s", path)
	return ""
}

// TestKubectlAgainstNodelet runs kubectl logs, exec, attach and
// port-forward through the real API server to a nodelet registered as a
// node, with the upstream defaults of a config file: bearer tokens checked
// with TokenReview, every request authorized with SubjectAccessReview, the
// API server authenticated by its kubelet client certificate.
func TestKubectlAgainstNodelet(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt,
		"--kubeconfig", cluster.NodeKubeconfig,
		"--client-ca-file", cluster.CAFile,
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", strconv.Itoa(port),
	)
	poll.Within(t, 60*time.Second, "the node to be Ready", func() (bool, string) {
		out, err := cluster.Kubectl("get", "node", framework.NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.daemonEndpoints.kubeletEndpoint.Port}`)
		return err == nil && out == "True "+strconv.Itoa(port), fmt.Sprint(out, err)
	})
	if _, err := cluster.KubectlInput(kubectlPodManifest(), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	n.WriteManifest("static.yaml", staticManifest)
	runKubectlSuite(t, cluster, port, kubectlSuite{pod: "api", webhook: true, mirrors: true})
}

// kubectlSuite says what the nodelet under test does.
type kubectlSuite struct {
	// pod is the API name of the pod of apiPodManifest.
	pod string
	// webhook: the nodelet authorizes with SubjectAccessReview, so a user
	// without RBAC permission is refused.
	webhook bool
	// mirrors: the nodelet runs static.yaml and keeps its mirror pod.
	mirrors bool
}

// runKubectlSuite is the kubectl half of the node API tests.
func runKubectlSuite(t *testing.T, cluster *framework.Cluster, port int, suite kubectlSuite) {
	api := suite.pod
	poll.Within(t, 90*time.Second, "pod api running", func() (bool, string) {
		out, err := cluster.Kubectl("get", "pod", api, "-o", `jsonpath={.status.phase} {.status.containerStatuses[?(@.name=="reader")].ready}`)
		return err == nil && out == "Running true", fmt.Sprint(out, err)
	})

	t.Run("logs", func(t *testing.T) {
		all, err := cluster.Kubectl("logs", api, "-c", "talker")
		if err != nil || !strings.Contains(all, "started\n") || !strings.Contains(all, "tick 0\n") {
			t.Errorf("kubectl logs: %.60q %v", all, err)
		}
		out, err := cluster.Kubectl("logs", api, "-c", "talker", "--tail=2")
		if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); err != nil || len(lines) != 2 {
			t.Errorf("kubectl logs --tail=2: %q %v", out, err)
		}
		out, err = cluster.Kubectl("logs", api, "-c", "talker", "--limit-bytes=7")
		if err != nil || len(all) < 7 || out != all[:7] {
			t.Errorf("kubectl logs --limit-bytes=7: %q %v", out, err)
		}
	})

	t.Run("logs -f", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := kubectlCmd(ctx, cluster, "logs", "-f", api, "-c", "talker", "--tail=1")
		out := &watchBuffer{want: "tick", found: make(chan struct{})}
		cmd.Stdout = out
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(20 * time.Second)
		for strings.Count(out.String(), "tick") < 4 {
			select {
			case <-deadline:
				t.Fatalf("kubectl logs -f gave %q (stderr %s)", out.String(), stderr.String())
			case <-time.After(100 * time.Millisecond):
			}
		}
		cancel()
		_ = cmd.Wait()
	})

	t.Run("logs --previous", func(t *testing.T) {
		poll.Within(t, 60*time.Second, "crasher running again", func() (bool, string) {
			out, err := cluster.Kubectl("get", "pod", api, "-o", `jsonpath={.status.containerStatuses[?(@.name=="crasher")].restartCount} {.status.containerStatuses[?(@.name=="crasher")].state.running.startedAt}`)
			rc, started, _ := strings.Cut(out, " ")
			n, _ := strconv.Atoi(rc)
			return err == nil && n >= 1 && started != "", fmt.Sprint(out, err)
		})
		prev, err := cluster.Kubectl("logs", api, "-c", "crasher", "--previous")
		if err != nil || !strings.HasPrefix(prev, "run ") {
			t.Fatalf("kubectl logs --previous: %q %v", prev, err)
		}
		cur, _ := cluster.Kubectl("logs", api, "-c", "crasher")
		if !strings.HasPrefix(cur, "run ") || cur == prev {
			t.Errorf("--previous %q, current %q: want two different runs", prev, cur)
		}
	})

	t.Run("exec", func(t *testing.T) {
		out, err := cluster.Kubectl("exec", api, "-c", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("kubectl exec exit: %v, want exit code 3", err)
		}
		if out != "out\n" || !strings.Contains(fmt.Sprint(err), "err") {
			t.Errorf("kubectl exec: stdout %q, error %v", out, err)
		}
		out, err = cluster.KubectlInput("piped\n", "exec", "-i", api, "-c", "web", "--", "cat")
		if err != nil || out != "piped\n" {
			t.Errorf("kubectl exec -i: %q %v", out, err)
		}
	})

	t.Run("exec -it", func(t *testing.T) {
		// script gives kubectl a real terminal on this side.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// The first resize may arrive just after the shell starts: ask
		// until the terminal has a size.
		remote := `for i in 1 2 3 4 5 6 7 8 9 10; do s=$(stty size 2>/dev/null); case "$s" in ""|"0 0") sleep 0.2;; *) break;; esac; done; echo "size=$s"; tty; echo $((6*7)); exit 4`
		inner := fmt.Sprintf("stty cols 100 rows 40; %s --kubeconfig %s exec -it %s -c web -- sh -c '%s'",
			kubectlBin(), cluster.AdminKubeconfig, api, remote)
		cmd := exec.CommandContext(ctx, "script", "-qefc", inner, "/dev/null")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 4 {
			t.Errorf("kubectl exec -it exit: %v, want 4 (output %q)", err, out)
		}
		for _, want := range []string{"size=40 100", "/dev/pts/", "42"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("kubectl exec -it output %q lacks %q", out, want)
			}
		}
	})

	t.Run("attach", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := kubectlCmd(ctx, cluster, "attach", "-i", api, "-c", "reader")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := &watchBuffer{want: "got:hello", found: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
			for {
				io.WriteString(stdin, "hello\n")
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
		select {
		case <-out.found:
		case <-ctx.Done():
			t.Errorf("kubectl attach: no answer: %q", out.String())
		}
		cancel()
		_ = cmd.Wait()
	})

	t.Run("port-forward", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := kubectlCmd(ctx, cluster, "port-forward", "pod/"+api, ":8080")
		out := &watchBuffer{want: "-> 8080", found: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		select {
		case <-out.found:
		case <-time.After(30 * time.Second):
			t.Fatalf("kubectl port-forward: %q", out.String())
		}
		var local int
		for _, line := range strings.Split(out.String(), "\n") {
			if _, err := fmt.Sscanf(line, "Forwarding from 127.0.0.1:%d -> 8080", &local); err == nil {
				break
			}
		}
		if local == 0 {
			t.Fatalf("no local port in %q", out.String())
		}
		for i := 0; i < 3; i++ {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", local))
			if err != nil {
				t.Fatalf("GET through kubectl port-forward: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "hello-from-pod\n" {
				t.Errorf("through kubectl port-forward: %q", b)
			}
		}
		// Bytes both ways, more than one buffer's worth.
		const bigSize = 1000000
		execOut, err := cluster.Kubectl("exec", api, "-c", "web", "--", "sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x > /www/big.txt && echo ok", bigSize))
		if err != nil || execOut != "ok\n" {
			t.Fatalf("writing a big file: %q %v", execOut, err)
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/big.txt", local))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) != bigSize || strings.Trim(string(b), "x") != "" {
			t.Errorf("big file through port-forward: %d bytes", len(b))
		}
	})

	admin := nodeClient{base: fmt.Sprintf("https://127.0.0.1:%d", port), token: kubeconfigToken(t, cluster.AdminKubeconfig)}
	t.Run("stats summary with and without a token", func(t *testing.T) {
		if code, _ := (nodeClient{base: admin.base}).do(t, "GET", "/stats/summary"); code != http.StatusUnauthorized {
			t.Errorf("summary without a token: %d, want 401", code)
		}
		if code, _ := (nodeClient{base: admin.base, token: "not-a-token"}).do(t, "GET", "/stats/summary"); code != http.StatusUnauthorized {
			t.Errorf("summary with a bad token: %d, want 401", code)
		}
		if suite.webhook {
			var s statsapi.Summary
			if err := json.Unmarshal([]byte(admin.get(t, "/stats/summary")), &s); err != nil || s.Node.NodeName != framework.NodeName {
				t.Errorf("summary with the admin token: %v %+v", err, s.Node)
			}
			if _, err := cluster.Kubectl("create", "serviceaccount", "nobody"); err != nil {
				t.Fatal(err)
			}
			token, err := cluster.Kubectl("create", "token", "nobody")
			if err != nil {
				t.Fatal(err)
			}
			code, body := (nodeClient{base: admin.base, token: strings.TrimSpace(token)}).do(t, "GET", "/stats/summary")
			if code != http.StatusForbidden || !strings.Contains(body, "subresource=stats") {
				t.Errorf("summary as a service account without RBAC: %d %q, want 403", code, body)
			}
		}
		// Not through the API server's nodes/proxy: it refuses to proxy to a
		// loopback address ("address not allowed"), and the test node has
		// no other.
	})

	t.Run("legacy stats by static and mirror UID", func(t *testing.T) {
		if !suite.mirrors {
			t.Skip("no mirror pods")
		}
		static := "static" + staticSuffix
		var mirrorUID string
		poll.Within(t, 60*time.Second, "the mirror pod", func() (bool, string) {
			out, err := cluster.Kubectl("get", "pod", static, "-o", "jsonpath={.metadata.uid}")
			mirrorUID = out
			return err == nil && out != "", fmt.Sprint(out, err)
		})
		var list v1.PodList
		if err := json.Unmarshal([]byte(admin.get(t, "/pods")), &list); err != nil {
			t.Fatal(err)
		}
		var staticUID string
		for _, p := range list.Items {
			if p.Name == static {
				staticUID = string(p.UID)
			}
		}
		if staticUID == "" || staticUID == mirrorUID {
			t.Fatalf("static UID %q, mirror UID %q", staticUID, mirrorUID)
		}
		var byStatic, byMirror statsapi.ContainerStats
		json.Unmarshal([]byte(admin.get(t, fmt.Sprintf("/stats/default/%s/%s/sleeper", static, staticUID))), &byStatic)
		json.Unmarshal([]byte(admin.get(t, fmt.Sprintf("/stats/default/%s/%s/sleeper", static, mirrorUID))), &byMirror)
		if byStatic.Name != "sleeper" || byMirror.Name != "sleeper" || !byStatic.StartTime.Equal(&byMirror.StartTime) {
			t.Errorf("by static UID %+v, by mirror UID %+v: want the same container", byStatic, byMirror)
		}
		if code, _ := admin.do(t, "GET", fmt.Sprintf("/stats/default/%s/not-a-uid/sleeper", static)); code != http.StatusNotFound {
			t.Errorf("unknown UID: %d", code)
		}
	})
}
