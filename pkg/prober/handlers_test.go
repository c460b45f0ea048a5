package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

func testHandlers(e Execer) handlers {
	return handlers{exec: e, userAgent: "kube-probe/1.37"}
}

// splitHostPort returns an httptest server's host and port.
func splitHostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return u.Hostname(), port
}

func httpProbe(host string, port int, path string, headers ...v1.HTTPHeader) *v1.Probe {
	return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
		Host: host, Port: intstr.FromInt32(int32(port)), Path: path, HTTPHeaders: headers,
	}}}
}

func TestHTTPProbe(t *testing.T) {
	var gotUA, gotHost, gotAccept, gotCustom string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotHost, gotAccept, gotCustom = r.UserAgent(), r.Host, r.Header.Get("Accept"), r.Header.Get("X-Custom")
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "secret body", http.StatusInternalServerError)
	})
	mux.HandleFunc("/local-redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/local-redirect-to-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	mux.HandleFunc("/offhost-redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/hang-in-body", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := splitHostPort(t, srv.URL)
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	_, tlsPort := splitHostPort(t, tlsSrv.URL)
	h := testHandlers(nil)
	c := &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	tgt := probeTarget{container: c, podIP: host}

	tests := []struct {
		name    string
		probe   *v1.Probe
		want    outcome
		msgHas  string
		msgNot  string
		wantErr bool
	}{
		{"2xx", httpProbe("", port, "/ok"), outcomeSuccess, "fine", "", false},
		{"5xx", httpProbe("", port, "/fail"), outcomeFailure, "HTTP probe failed with statuscode: 500", "secret", false},
		{"same-host redirect followed", httpProbe("", port, "/local-redirect"), outcomeSuccess, "fine", "", false},
		{"same-host redirect to a failure", httpProbe("", port, "/local-redirect-to-fail"), outcomeFailure, "statuscode: 500", "", false},
		{"off-host redirect is a warning", httpProbe("", port, "/offhost-redirect"), outcomeWarning, "Probe terminated redirects", "", false},
		{"endless body reads 10 KiB", httpProbe("", port, "/endless"), outcomeSuccess, "", "", false},
		{"hang costs the timeout", httpProbe("", port, "/hang"), outcomeFailure, "context deadline exceeded (Client.Timeout exceeded while awaiting headers)", "", false},
		{"body that never ends costs the timeout", httpProbe("", port, "/hang-in-body"), outcomeFailure, "deadline exceeded", "", false},
		{"redirect loop", httpProbe("", port, "/loop"), outcomeFailure, "stopped after 10 redirects", "", false},
		{"closed port", httpProbe("127.0.0.1", closedPort(t), "/"), outcomeFailure, "connection refused", "", false},
		{"port by name", &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("web"), Path: "/ok"}}}, outcomeSuccess, "fine", "", false},
		{"unknown port name", &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("nope"), Path: "/ok"}}}, outcomeFailure, "", "", true},
		{"https without verification", &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Port: intstr.FromInt32(int32(tlsPort)), Path: "/ok"}}}, outcomeSuccess, "fine", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg, err := h.run(context.Background(), tt.probe, tgt)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got != tt.want || !strings.Contains(msg, tt.msgHas) || (tt.msgNot != "" && strings.Contains(msg, tt.msgNot)) {
				t.Fatalf("outcome %v, %q; want %v containing %q", got, msg, tt.want, tt.msgHas)
			}
			if len(msg) > maxOutput {
				t.Fatalf("message of %d bytes, more than %d", len(msg), maxOutput)
			}
		})
	}

	_, _, _ = h.run(context.Background(), httpProbe("", port, "/ok", v1.HTTPHeader{Name: "Host", Value: "example.test"}, v1.HTTPHeader{Name: "X-Custom", Value: "yes"}), tgt)
	if gotUA != "kube-probe/1.37" || gotHost != "example.test" || gotAccept != "*/*" || gotCustom != "yes" {
		t.Fatalf("request: User-Agent %q Host %q Accept %q X-Custom %q", gotUA, gotHost, gotAccept, gotCustom)
	}
	_, _, _ = h.run(context.Background(), httpProbe("", port, "/ok", v1.HTTPHeader{Name: "User-Agent", Value: "mine"}, v1.HTTPHeader{Name: "Accept", Value: ""}), tgt)
	if gotUA != "mine" || gotAccept != "" {
		t.Fatalf("overridden headers: User-Agent %q Accept %q", gotUA, gotAccept)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	h := testHandlers(nil)
	c := &v1.Container{Name: "c"}
	tcp := func(port int) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
	}
	if got, msg, err := h.run(context.Background(), tcp(l.Addr().(*net.TCPAddr).Port), probeTarget{container: c, podIP: "127.0.0.1"}); err != nil || got != outcomeSuccess {
		t.Fatalf("open port: %v %q %v", got, msg, err)
	}
	if got, _, err := h.run(context.Background(), tcp(closedPort(t)), probeTarget{container: c, podIP: "127.0.0.1"}); err != nil || got != outcomeFailure {
		t.Fatalf("closed port: %v %v", got, err)
	}
	if _, _, err := h.run(context.Background(), tcp(70000), probeTarget{container: c, podIP: "127.0.0.1"}); err == nil {
		t.Fatal("port 70000: no error")
	}
}

type fakeExec struct {
	resp *runtimeapi.ExecSyncResponse
	err  error
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	return f.resp, f.err
}

func TestExecProbe(t *testing.T) {
	cmd := []string{"cat", "/tmp/healthy"}
	p := &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}
	long := strings.Repeat("y", 3*maxOutput)
	tests := []struct {
		name    string
		exec    *fakeExec
		want    outcome
		msg     string
		wantErr bool
	}{
		{"exit 0", &fakeExec{resp: &runtimeapi.ExecSyncResponse{Stdout: []byte("ok")}}, outcomeSuccess, "ok", false},
		{"exit 1 shows output", &fakeExec{resp: &runtimeapi.ExecSyncResponse{ExitCode: 1, Stdout: []byte("out "), Stderr: []byte("no such file")}}, outcomeFailure, "out no such file", false},
		{"output is bounded", &fakeExec{resp: &runtimeapi.ExecSyncResponse{ExitCode: 1, Stdout: []byte(long)}}, outcomeFailure, long[:maxOutput], false},
		{"timeout is a failure", &fakeExec{err: fmt.Errorf("exec: %w", cri.ErrTimeout)}, outcomeFailure, `command "cat /tmp/healthy" timed out`, false},
		{"runtime error is no result", &fakeExec{err: errors.New("container gone")}, outcomeFailure, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg, err := testHandlers(tt.exec).run(context.Background(), p, probeTarget{containerID: "id"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (got != tt.want || msg != tt.msg) {
				t.Fatalf("got %v %q, want %v %q", got, msg, tt.want, tt.msg)
			}
		})
	}
}

func TestGRPCProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	port := l.Addr().(*net.TCPAddr).Port
	bare := grpc.NewServer() // no health service
	lb, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = bare.Serve(lb) }()
	defer bare.Stop()

	grpcProbe := func(port int, service string) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port), Service: &service}}}
	}
	tests := []struct {
		name   string
		probe  *v1.Probe
		want   outcome
		msgHas string
	}{
		{"serving", grpcProbe(port, ""), outcomeSuccess, "service healthy"},
		{"not serving", grpcProbe(port, "down"), outcomeFailure, "NOT_SERVING"},
		{"unknown service", grpcProbe(port, "nope"), outcomeFailure, "health rpc probe failed"},
		{"no health service", grpcProbe(lb.Addr().(*net.TCPAddr).Port, ""), outcomeFailure, "does not implement the grpc health protocol"},
		{"closed port", grpcProbe(closedPort(t), ""), outcomeFailure, "error"},
	}
	h := testHandlers(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg, err := h.run(context.Background(), tt.probe, probeTarget{container: &v1.Container{}, podIP: "127.0.0.1"})
			if err != nil || got != tt.want || !strings.Contains(msg, tt.msgHas) {
				t.Fatalf("got %v %q %v, want %v containing %q", got, msg, err, tt.want, tt.msgHas)
			}
		})
	}
}

// TestHTTP2Probe: protocol HTTP2 on an http probe speaks h2c with prior
// knowledge: it passes against an h2c server and fails against a server
// that speaks only HTTP/1.1 (upstream's H2CContainerProbe).
func TestHTTP2Probe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) })
	h2c := httptest.NewUnstartedServer(mux)
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	defer h2c.Close()
	h1 := httptest.NewServer(mux)
	defer h1.Close()
	http2 := v1.HTTPProtocolHTTP2
	probe := func(port int) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
			Port: intstr.FromInt32(int32(port)), Path: "/", Protocol: &http2,
		}}}
	}
	h := testHandlers(nil)
	host, h2cPort := splitHostPort(t, h2c.URL)
	_, h1Port := splitHostPort(t, h1.URL)
	tgt := probeTarget{container: &v1.Container{}, podIP: host}
	if got, msg, err := h.run(context.Background(), probe(h2cPort), tgt); err != nil || got != outcomeSuccess || msg != "HTTP/2.0" {
		t.Errorf("h2c server: %v %q %v, want a success over HTTP/2.0", got, msg, err)
	}
	if got, msg, err := h.run(context.Background(), probe(h1Port), tgt); err != nil || got != outcomeFailure {
		t.Errorf("HTTP/1.1 server: %v %q %v, want a failure", got, msg, err)
	}
}

// TestGRPCProbeTLS: mode TLS connects over TLS without verifying the
// server's certificate; a plaintext probe against the TLS server fails.
func TestGRPCProbeTLS(t *testing.T) {
	// httptest's self-signed certificate serves the gRPC server.
	certSrv := httptest.NewTLSServer(http.NotFoundHandler())
	cert := certSrv.TLS.Certificates[0]
	certSrv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	port := int32(l.Addr().(*net.TCPAddr).Port)
	tlsMode := v1.GRPCProbeModeTLS
	h := testHandlers(nil)
	tgt := probeTarget{container: &v1.Container{}, podIP: "127.0.0.1"}
	withTLS := &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: port, Mode: &tlsMode}}}
	if got, msg, err := h.run(context.Background(), withTLS, tgt); err != nil || got != outcomeSuccess {
		t.Errorf("TLS mode: %v %q %v, want a success", got, msg, err)
	}
	plain := &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: port}}}
	if got, msg, err := h.run(context.Background(), plain, tgt); err != nil || got != outcomeFailure {
		t.Errorf("plaintext against TLS: %v %q %v, want a failure", got, msg, err)
	}
}
