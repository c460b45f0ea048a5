package lifecycle

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type fakeExec struct {
	resp *runtimeapi.ExecSyncResponse
	err  error
	cmd  []string
}

func (f *fakeExec) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	f.cmd = cmd
	return f.resp, f.err
}

func target(c *v1.Container) Target {
	return Target{
		Pod:       &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}},
		Container: c, ID: "cid", PodIP: "127.0.0.1",
	}
}

func TestExecHook(t *testing.T) {
	c := &v1.Container{Name: "app"}
	h := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "x"}}}
	for _, tc := range []struct {
		name    string
		exec    *fakeExec
		wantErr bool
		wantMsg string
	}{
		{name: "ok", exec: &fakeExec{resp: &runtimeapi.ExecSyncResponse{}}},
		{name: "non-zero exit", exec: &fakeExec{resp: &runtimeapi.ExecSyncResponse{ExitCode: 2, Stderr: []byte("boom")}}, wantErr: true,
			wantMsg: `Exec lifecycle hook ([sh -c x]) for Container "app" in Pod "web_ns(u1)" failed - error: command 'sh -c x' exited with 2: boom, message: "boom"`},
		{name: "runtime error", exec: &fakeExec{err: errors.New("no such container")}, wantErr: true,
			wantMsg: `Exec lifecycle hook ([sh -c x]) for Container "app" in Pod "web_ns(u1)" failed - error: no such container, message: ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := New(tc.exec).Run(context.Background(), target(c), h)
			if (err != nil) != tc.wantErr || msg != tc.wantMsg {
				t.Errorf("Run = %q, %v; want %q (err %v)", msg, err, tc.wantMsg, tc.wantErr)
			}
		})
	}
}

func TestHTTPHook(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.WriteHeader(http.StatusInternalServerError) // upstream ignores the code
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
		Path: "hook", Port: intstr.FromString("web"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Test", Value: "1"}, {Name: "Host", Value: "example.test"}},
	}}
	msg, err := New(nil).Run(context.Background(), target(c), h)
	if err != nil || msg != "" {
		t.Fatalf("Run = %q, %v", msg, err)
	}
	if got.URL.Path != "/hook" || got.Header.Get("X-Test") != "1" || got.Host != "example.test" ||
		!strings.HasPrefix(got.Header.Get("User-Agent"), "kube-lifecycle/") {
		t.Errorf("request %s %v host %s", got.URL, got.Header, got.Host)
	}

	// HTTPS answered in plain HTTP falls back to HTTP.
	h.HTTPGet.Scheme = v1.URISchemeHTTPS
	if _, err := New(nil).Run(context.Background(), target(c), h); err != nil {
		t.Errorf("https fallback: %v", err)
	}

	// A closed port fails with upstream's message.
	srv.Close()
	h.HTTPGet.Scheme = ""
	msg, err = New(nil).Run(context.Background(), target(c), h)
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (hook) for Container "app" in Pod "web_ns(u1)" failed - error: `) {
		t.Errorf("closed port: %q, %v", msg, err)
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tc := range []struct {
		p       intstr.IntOrString
		want    int
		wantErr bool
	}{
		{p: intstr.FromInt32(80), want: 80},
		{p: intstr.FromString("81"), want: 81},
		{p: intstr.FromString("http"), want: 8080},
		{p: intstr.FromString("nope"), wantErr: true},
		{p: intstr.FromInt32(0), wantErr: true},
		{p: intstr.FromInt32(70000), wantErr: true},
	} {
		got, err := ResolvePort(tc.p, c)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ResolvePort(%v) = %d, %v", tc.p.String(), got, err)
		}
	}
}

func TestHTTPHookNeedsAHost(t *testing.T) {
	c := &v1.Container{Name: "app"}
	tg := target(c)
	tg.PodIP = ""
	_, err := New(nil).Run(context.Background(), tg, &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}})
	if err == nil || !strings.Contains(err.Error(), "failed to find networking container") {
		t.Errorf("err %v", err)
	}
}

func TestSleepHookEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg, err := New(nil).Run(ctx, target(&v1.Container{Name: "app"}), &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3600}})
	if err == nil || !strings.Contains(msg, "container terminated before sleep hook finished") {
		t.Errorf("Run = %q, %v", msg, err)
	}
	if msg, err := New(nil).Run(context.Background(), target(&v1.Container{Name: "app"}), &v1.LifecycleHandler{Sleep: &v1.SleepAction{}}); err != nil {
		t.Errorf("zero sleep: %q, %v", msg, err)
	}
	if _, err := New(nil).Run(context.Background(), target(&v1.Container{Name: "app"}), &v1.LifecycleHandler{}); !errors.Is(err, ErrInvalidHandler) {
		t.Errorf("empty handler: %v", err)
	}
}
