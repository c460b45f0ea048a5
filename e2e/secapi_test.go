//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

const secTaintKey = "e2e.example.com/dedicated"

// TestNodeAPISecurityFlagsAndAbuse runs nodelet in a cluster with
// --tls-min-version VersionTLS13, --register-with-taints and
// --anonymous-auth=false (tokens checked with TokenReview, requests
// authorized with SubjectAccessReview, the config file's defaults), checks
// each flag from outside, then abuses the node API - malformed paths, huge
// headers, slow clients holding connections, a thousand bad tokens - and
// checks that nodelet still answers good requests and the pod still runs,
// untouched.
func TestNodeAPISecurityFlagsAndAbuse(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	port := framework.FreePort(t)
	n := framework.StartNodelet(t, rt,
		"--kubeconfig", cluster.NodeKubeconfig,
		"--client-ca-file", cluster.CAFile,
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", strconv.Itoa(port),
		"--tls-min-version", "VersionTLS13",
		"--register-with-taints", secTaintKey+"=secapi:NoSchedule,e2e.example.com/quiet:PreferNoSchedule",
		"--anonymous-auth=false",
		"--streaming-connection-idle-timeout=2s",
	)
	n.WriteManifest("steady.yaml", podManifest("steady", container("app", "sleep 3600")))
	pod := n.WaitPod("steady"+staticSuffix, 90*time.Second, "running", framework.Running)
	containerID := framework.ContainerStatus(pod, "app").ContainerID

	addr := fmt.Sprintf("127.0.0.1:%d", port)
	admin := nodeClient{base: "https://" + addr, token: kubeconfigToken(t, cluster.AdminKubeconfig)}
	good := func(t *testing.T) {
		t.Helper()
		if code, body := admin.do(t, "GET", "/pods"); code != http.StatusOK || !strings.Contains(body, "steady"+staticSuffix) {
			t.Fatalf("good request: %d %.200s", code, body)
		}
	}
	good(t)

	t.Run("tls-min-version", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
		if err == nil {
			c.Close()
			t.Fatal("a TLS 1.2 client completed a handshake with --tls-min-version VersionTLS13")
		}
		t.Logf("TLS 1.2 client refused: %v", err)
		c, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
		if err != nil {
			t.Fatalf("TLS 1.3 client: %v", err)
		}
		if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
			t.Errorf("negotiated %x", v)
		}
		c.Close()
	})

	t.Run("register-with-taints", func(t *testing.T) {
		node, err := kubeClient(t, cluster.AdminKubeconfig).CoreV1().Nodes().Get(context.Background(), framework.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]v1.Taint{
			secTaintKey:             {Key: secTaintKey, Value: "secapi", Effect: v1.TaintEffectNoSchedule},
			"e2e.example.com/quiet": {Key: "e2e.example.com/quiet", Effect: v1.TaintEffectPreferNoSchedule},
		}
		for _, got := range node.Spec.Taints {
			if w, ok := want[got.Key]; ok && w.Value == got.Value && w.Effect == got.Effect {
				delete(want, got.Key)
			}
		}
		if len(want) > 0 {
			t.Errorf("taints %v lack %v", node.Spec.Taints, want)
		}
	})

	t.Run("anonymous-auth=false", func(t *testing.T) {
		for _, p := range []string{"/pods", "/healthz", "/stats/summary", "/no/such/path"} {
			if code, _ := (nodeClient{base: admin.base}).do(t, "GET", p); code != http.StatusUnauthorized {
				t.Errorf("anonymous GET %s: %d, want 401", p, code)
			}
		}
	})

	t.Run("streaming-connection-idle-timeout", func(t *testing.T) {
		// An exec that prints nothing for 20 s is closed once idle (client-go
		// pings every 5 s, so the 2 s timeout is reached between pings).
		start := time.Now()
		_, _, err := admin.exec(t, "steady"+staticSuffix, "app", []string{"sleep", "20"}, nil, false, nil)
		took := time.Since(start)
		// A closed session ends the client's streams without an exit code,
		// which client-go reports as success: the time tells.
		if took >= 20*time.Second {
			t.Fatalf("idle exec session ran to its end (%s, err %v): not closed when idle", took, err)
		}
		t.Logf("MEASURE idle exec session closed after %s (client error: %v)", took.Round(time.Millisecond), err)
		if out, _, err := admin.exec(t, "steady"+staticSuffix, "app", []string{"echo", "still-here"}, nil, false, nil); err != nil || !strings.Contains(out, "still-here") {
			t.Errorf("exec after the idle one: %q %v", out, err)
		}
	})

	t.Run("abuse", func(t *testing.T) {
		tlsCfg := &tls.Config{InsecureSkipVerify: true}
		raw := func(t *testing.T, req string) (int, error) {
			t.Helper()
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, tlsCfg)
			if err != nil {
				return 0, err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			go func() { _, _ = io.WriteString(c, req) }() // the server may answer before it has read it all
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}

		// Malformed paths and queries, authenticated so they reach the routes.
		auth := "Authorization: Bearer " + admin.token + "\r\n"
		for _, target := range []string{
			"/../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/%zz", "//exec///", "/exec/a/b/c",
			"/containerLogs/default/steady" + staticSuffix + "/app?tailLines=-5&limitBytes=-1&sinceTime=yesterday",
			"/containerLogs/default/steady" + staticSuffix + "/../../../../etc/shadow",
			"/containerLogs/%00/%00/%00", "/stats/" + strings.Repeat("x/", 2000), "/portForward/default/steady" + staticSuffix + "?port=0,70000,-1",
			"/run/default/steady" + staticSuffix + "/app", "/pods?" + strings.Repeat("a=b&", 5000),
			"*",
		} {
			code, err := raw(t, "GET "+target+" HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n")
			if err != nil {
				t.Errorf("GET %.80s: %v", target, err)
				continue
			}
			if code >= 500 && code != http.StatusNotImplemented {
				t.Errorf("GET %.80s: %d", target, code)
			}
		}
		for _, line := range []string{"GET\r\n\r\n", "BREW /pods HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", "GET /pods HTTP/9.9\r\nHost: x\r\n\r\n", "\x00\x01\x02\r\n\r\n"} {
			// 505 is the honest answer to HTTP/9.9.
			if code, err := raw(t, line); err == nil && code >= 500 && code != http.StatusHTTPVersionNotSupported {
				t.Errorf("%q: %d", line, code)
			}
		}

		// Huge headers: refused with 431 (or the connection dropped), never served.
		code, err := raw(t, "GET /pods HTTP/1.1\r\nHost: x\r\n"+auth+"X-Big: "+strings.Repeat("a", 4<<20)+"\r\n\r\n")
		if err == nil && code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("4 MiB header: %d, want 431", code)
		}
		good(t)

		// Slow clients: connections that never finish their TLS handshake
		// or their headers. Good requests are served while they hang, and
		// the server drops them (read-header timeout) instead of holding
		// them forever.
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for range 50 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.Write([]byte{0x16, 0x03, 0x01}) // the start of a ClientHello, and nothing more
			held = append(held, c)
		}
		for range 50 {
			c, err := tls.Dial("tcp", addr, tlsCfg)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(c, "GET /pods HTTP/1.1\r\nHost: x\r\nX-Slow: ") // headers never end
			held = append(held, c)
		}
		good(t)
		var wg sync.WaitGroup
		dropped := make(chan error, len(held))
		for _, c := range held {
			wg.Go(func() {
				_ = c.SetReadDeadline(time.Now().Add(90 * time.Second))
				_, err := io.Copy(io.Discard, c)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					dropped <- fmt.Errorf("a slow client's connection was still open after 90 s")
					return
				}
				dropped <- nil
			})
		}
		wg.Wait()
		close(dropped)
		for err := range dropped {
			if err != nil {
				t.Error(err)
				break
			}
		}

		// A thousand bad tokens, 20 at a time: all 401, and the good
		// caller's cached answer is not evicted by them.
		start := time.Now()
		var mu sync.Mutex
		codes := map[int]int{}
		sem := make(chan struct{}, 20)
		client := admin.httpClient()
		for i := range 1000 {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				req, _ := http.NewRequest("GET", admin.base+"/pods", nil)
				req.Header.Set("Authorization", fmt.Sprintf("Bearer garbage-%d-%s", i, strings.Repeat("z", i%64)))
				resp, err := client.Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					codes[-1]++
					return
				}
				resp.Body.Close()
				codes[resp.StatusCode]++
			})
		}
		wg.Wait()
		t.Logf("MEASURE 1000 bad tokens (20 concurrent): %s, answers %v", time.Since(start).Round(time.Millisecond), codes)
		if codes[http.StatusUnauthorized] != 1000 {
			t.Errorf("bad tokens answered %v, want 1000 x 401", codes)
		}
		good(t)
	})

	// nodelet still serves, and the pod ran through it all untouched.
	good(t)
	p, err := n.Pod("steady" + staticSuffix)
	if err != nil || p == nil || !framework.Running(p) {
		t.Fatalf("pod after the abuse: %v %v", p, err)
	}
	if c := framework.ContainerStatus(p, "app"); c.ContainerID != containerID || c.RestartCount != 0 {
		t.Errorf("container restarted: %s -> %s, restarts %d", containerID, c.ContainerID, c.RestartCount)
	}
	if code, _, err := n.Readyz(); err != nil || code != http.StatusOK {
		t.Errorf("readyz after the abuse: %d %v", code, err)
	}
}
