package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/logs"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// fakeNode is a node with one static pod "web-node-a" (UID static-uid,
// mirrored as mirror-uid) and one API pod "api" in namespace "prod".
type fakeNode struct {
	mu        sync.Mutex
	pods      map[string]*v1.Pod
	mirrors   map[types.UID]types.UID
	runtime   map[types.UID]*runtime.PodStatus
	logCalls  []string
	execReqs  []*runtimeapi.ExecRequest
	pfReqs    []*runtimeapi.PortForwardRequest
	streamURL string
}

func newFakeNode() *fakeNode {
	pod := func(ns, name string, uid types.UID, containers ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
		}
		return p
	}
	n := &fakeNode{
		pods: map[string]*v1.Pod{
			"default/web-node-a": pod("default", "web-node-a", "static-uid", "app", "idle"),
			"prod/api":           pod("prod", "api", "api-uid", "app"),
			"prod/job":           pod("prod", "job", "job-uid", "app"),
			"prod/retry":         pod("prod", "retry", "retry-uid", "app"),
		},
		mirrors: map[types.UID]types.UID{"mirror-uid": "static-uid"},
		runtime: map[types.UID]*runtime.PodStatus{
			"static-uid": {
				Sandboxes: []*runtime.SandboxStatus{{ID: "sb-web", State: runtime.SandboxStateReady}},
				Containers: []*runtime.ContainerStatus{
					{ID: "app-2", Name: "app", State: runtime.ContainerStateRunning, LogPath: "/logs/web/app/2.log"},
					{ID: "app-1", Name: "app", State: runtime.ContainerStateExited, LogPath: "/logs/web/app/1.log"},
				},
			},
			"job-uid": {
				Containers: []*runtime.ContainerStatus{{ID: "job-1", Name: "app", State: runtime.ContainerStateExited, ExitCode: 1, LogPath: "/logs/job/app/0.log"}},
			},
			"retry-uid": {
				Containers: []*runtime.ContainerStatus{{ID: "retry-1", Name: "app", State: runtime.ContainerStateExited, ExitCode: 0, LogPath: "/logs/retry/app/0.log"}},
			},
			"api-uid": {
				Sandboxes: []*runtime.SandboxStatus{{ID: "sb-api", State: runtime.SandboxStateNotReady}},
				Containers: []*runtime.ContainerStatus{
					{ID: "dbg-1", Name: "dbg", State: runtime.ContainerStateExited, LogPath: "/logs/api/dbg/0.log"},
					{ID: "api-1", Name: "app", State: runtime.ContainerStateExited, LogPath: "/logs/api/app/0.log"},
				},
			},
		},
	}
	n.pods["prod/job"].Spec.RestartPolicy = v1.RestartPolicyNever
	n.pods["prod/api"].Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg"}}}
	n.pods["prod/retry"].Spec.RestartPolicy = v1.RestartPolicyOnFailure
	return n
}

func (n *fakeNode) deps() APIDeps {
	return APIDeps{
		Pods: func() []*v1.Pod { return nil },
		FindPod: func(ns, name string) (*v1.Pod, bool) {
			p, ok := n.pods[ns+"/"+name]
			return p, ok
		},
		ResolveUID: func(uid types.UID) types.UID {
			if s, ok := n.mirrors[uid]; ok {
				return s
			}
			return uid
		},
		RuntimeStatus: func(_ context.Context, uid types.UID, name, ns string) (*runtime.PodStatus, error) {
			if st, ok := n.runtime[uid]; ok {
				return st, nil
			}
			return &runtime.PodStatus{UID: uid}, nil
		},
		Summary: func(_ context.Context, only bool) (*statsapi.Summary, error) {
			return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: fmt.Sprintf("only=%v", only)}}, nil
		},
		ContainerStats: func(_ context.Context, id string) (*statsapi.ContainerStats, error) {
			return &statsapi.ContainerStats{Name: id}, nil
		},
		ReadLogs: func(_ context.Context, path, id string, o logs.Options, stdout, stderr io.Writer) error {
			n.mu.Lock()
			n.logCalls = append(n.logCalls, path)
			n.mu.Unlock()
			fmt.Fprintf(stdout, "path=%s id=%s follow=%v ts=%v", path, id, o.Follow, o.Timestamps)
			if o.TailLines != nil {
				fmt.Fprintf(stdout, " tail=%d", *o.TailLines)
			}
			if o.LimitBytes != nil {
				fmt.Fprintf(stderr, " limit=%d", *o.LimitBytes)
			}
			if !o.Since.IsZero() {
				fmt.Fprintf(stdout, " since=%s", o.Since.UTC().Format(time.RFC3339))
			}
			return nil
		},
		Exec: func(_ context.Context, r *runtimeapi.ExecRequest) (string, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.execReqs = append(n.execReqs, r)
			return n.streamURL + "/exec/token1", nil
		},
		Attach: func(_ context.Context, r *runtimeapi.AttachRequest) (string, error) {
			return n.streamURL + "/attach/token2", nil
		},
		PortForward: func(_ context.Context, r *runtimeapi.PortForwardRequest) (string, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.pfReqs = append(n.pfReqs, r)
			return n.streamURL + "/portforward/token3", nil
		},
		ExecSync: func(_ context.Context, id string, cmd []string, _ time.Duration) (*runtimeapi.ExecSyncResponse, error) {
			code := int32(0)
			if cmd[0] == "false" {
				code = 1
			}
			return &runtimeapi.ExecSyncResponse{Stdout: []byte("out:" + strings.Join(cmd, " ")), Stderr: []byte("|err"), ExitCode: code}, nil
		},
	}
}

func get(t *testing.T, h http.Handler, method, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Code, rec.Body.String()
}

func TestContainerLogs(t *testing.T) {
	n := newFakeNode()
	h := APIRoutes(n.deps())
	tests := []struct {
		name, target string
		code         int
		body         string
	}{
		{"latest", "/containerLogs/default/web-node-a/app", 200, "path=/logs/web/app/2.log id=app-2 follow=false ts=false"},
		{"previous", "/containerLogs/default/web-node-a/app?previous=true", 200, "path=/logs/web/app/1.log id=app-1"},
		{"options", "/containerLogs/default/web-node-a/app?follow=true&timestamps=1&tailLines=5&limitBytes=10&sinceTime=2026-01-02T03:04:05Z", 200,
			"follow=true ts=true tail=5 limit=10 since=2026-01-02T03:04:05Z"},
		{"exited container", "/containerLogs/prod/api/app", 200, "id=api-1"},
		// Dead and about to restart: its status shows it as the last
		// termination, so it is the previous one as well.
		{"previous in crash-loop back-off", "/containerLogs/prod/api/app?previous=true", 200, "id=api-1"},
		{"no previous, never restarted", "/containerLogs/prod/job/app?previous=true", 400, `previous terminated container "app" in pod "job" not found`},
		{"no previous, succeeded on failure policy", "/containerLogs/prod/retry/app?previous=true", 400, `previous terminated container "app" in pod "retry" not found`},
		{"terminated for good", "/containerLogs/prod/job/app", 200, "id=job-1"},
		{"ephemeral container", "/containerLogs/prod/api/dbg", 200, "path=/logs/api/dbg/0.log id=dbg-1"},
		// Exited under restartPolicy Always, but never restarted: no previous.
		{"ephemeral: no previous", "/containerLogs/prod/api/dbg?previous=true", 400, `previous terminated container "dbg" in pod "api" not found`},
		{"never started", "/containerLogs/default/web-node-a/idle", 400, `container "idle" in pod "web-node-a" is waiting to start`},
		{"unknown container", "/containerLogs/default/web-node-a/nope", 404, "not found"},
		{"unknown pod", "/containerLogs/default/nope/app", 404, "pod default/nope: not found"},
		{"wrong namespace", "/containerLogs/prod/web-node-a/app", 404, "not found"},
		{"bad tail", "/containerLogs/default/web-node-a/app?tailLines=-1", 400, "tailLines"},
		{"bad limit", "/containerLogs/default/web-node-a/app?limitBytes=0", 400, "limitBytes"},
		{"both since", "/containerLogs/default/web-node-a/app?sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z", 400, "cannot both"},
		{"bad since", "/containerLogs/default/web-node-a/app?sinceSeconds=0", 400, "sinceSeconds"},
		{"bad bool", "/containerLogs/default/web-node-a/app?follow=maybe", 400, "follow"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, h, "GET", tc.target)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d containing %q", code, body, tc.code, tc.body)
			}
		})
	}
	opts, _, err := parseLogOptions(map[string][]string{"sinceSeconds": {"60"}}, time.Unix(1000, 0))
	if err != nil || !opts.Since.Equal(time.Unix(940, 0)) {
		t.Errorf("sinceSeconds: %v %v", opts.Since, err)
	}
}

func TestContainerLogsStreamAndErrors(t *testing.T) {
	d := newFakeNode().deps()
	d.ReadLogs = func(ctx context.Context, _, _ string, _ logs.Options, stdout, _ io.Writer) error {
		return errors.New("log file gone")
	}
	if code, body := get(t, APIRoutes(d), "GET", "/containerLogs/default/web-node-a/app"); code != 500 || !strings.Contains(body, "log file gone") {
		t.Errorf("error before output: %d %q", code, body)
	}
	d.ReadLogs = func(ctx context.Context, _, _ string, _ logs.Options, stdout, _ io.Writer) error {
		io.WriteString(stdout, "partial")
		return errors.New("log file gone")
	}
	if code, body := get(t, APIRoutes(d), "GET", "/containerLogs/default/web-node-a/app"); code != 200 || body != "partial" {
		t.Errorf("error after output: %d %q", code, body)
	}
	d.ReadLogs = func(context.Context, string, string, logs.Options, io.Writer, io.Writer) error { return nil }
	if code, body := get(t, APIRoutes(d), "GET", "/containerLogs/default/web-node-a/app"); code != 200 || body != "" {
		t.Errorf("empty log: %d %q", code, body)
	}
	d.ReadLogs = nil
	if code, _ := get(t, APIRoutes(d), "GET", "/containerLogs/default/web-node-a/app"); code != 501 {
		t.Errorf("no ReadLogs: %d", code)
	}
}

func TestStatsEndpoints(t *testing.T) {
	n := newFakeNode()
	h := APIRoutes(n.deps())
	tests := []struct {
		name, target string
		code         int
		body         string
	}{
		{"summary", "/stats/summary", 200, `"nodeName":"only=false"`},
		{"summary cpu and memory", "/stats/summary?only_cpu_and_memory=true", 200, `"nodeName":"only=true"`},
		{"summary bad flag", "/stats/summary?only_cpu_and_memory=x", 400, "only_cpu_and_memory"},
		{"static UID", "/stats/default/web-node-a/static-uid/app", 200, `"name":"app-2"`},
		{"mirror UID", "/stats/default/web-node-a/mirror-uid/app", 200, `"name":"app-2"`},
		{"default namespace path", "/stats/web-node-a/app", 200, `"name":"app-2"`},
		{"unknown UID", "/stats/default/web-node-a/other-uid/app", 404, "not found"},
		{"unknown pod", "/stats/default/nope/static-uid/app", 404, "not found"},
		{"unknown container", "/stats/default/web-node-a/static-uid/nope", 404, "not found"},
		{"API pod by its UID", "/stats/prod/api/api-uid/app", 200, `"name":"api-1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, h, "GET", tc.target)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d containing %q", code, body, tc.code, tc.body)
			}
			if code == 200 && !json.Valid([]byte(body)) {
				t.Errorf("not JSON: %q", body)
			}
		})
	}
	if code, _ := get(t, APIRoutes(APIDeps{}), "GET", "/stats/summary"); code != 501 {
		t.Errorf("no Summary: %d", code)
	}
}

func TestRun(t *testing.T) {
	h := APIRoutes(newFakeNode().deps())
	tests := []struct {
		method, target string
		code           int
		body           string
	}{
		{"POST", "/run/default/web-node-a/app?command=echo&command=hi", 200, "out:echo hi|err"},
		{"POST", "/run/default/web-node-a/mirror-uid/app?command=echo", 200, "out:echo|err"},
		{"POST", "/run/default/web-node-a/app?command=false", 500, "exited with code 1: out:false|err"},
		{"POST", "/run/default/web-node-a/app", 400, "no command"},
		{"POST", "/run/prod/api/app?command=ls", 400, "not running"},
		{"GET", "/run/default/web-node-a/app?command=ls", 405, ""},
	}
	for _, tc := range tests {
		code, body := get(t, h, tc.method, tc.target)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.target, code, body, tc.code, tc.body)
		}
	}
}

// upgradeEcho is a stand-in for the runtime's streaming server: it accepts
// an upgrade and echoes what it reads, after a line naming the path and
// the Authorization header it saw.
func upgradeEcho(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "upgrade required", http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/expired") {
			http.Error(w, "token expired", http.StatusNotFound)
			return
		}
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
		fmt.Fprintf(conn, "path=%s auth=%q\n", r.URL.Path, r.Header.Get("Authorization"))
		io.Copy(conn, brw)
	}))
}

// dialUpgrade sends an upgrade request on a raw connection and returns the
// response status and the connection for the upgraded protocol.
func dialUpgrade(t *testing.T, addr, method, path, token string) (int, *bufio.Reader, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: node\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n%s\r\n", method, path, auth)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Logf("%s %s: %s %s", method, path, resp.Status, b)
	}
	return resp.StatusCode, br, conn
}

func TestStreamingProxy(t *testing.T) {
	backend := upgradeEcho(t)
	defer backend.Close()
	n := newFakeNode()
	n.streamURL = backend.URL
	auth := Auth{NodeName: testNode, Authorizer: AlwaysAllow, Authenticators: Authenticators{List: []Authenticator{
		TokenAuthenticator((&authFixture{}).tokenReview, CacheOptions{}),
	}}}
	front := httptest.NewServer(APIHandler(auth, n.deps()))
	defer front.Close()
	addr := strings.TrimPrefix(front.URL, "http://")

	tests := []struct {
		method, path, wantBackend string
	}{
		{"POST", "/exec/default/web-node-a/app?command=sh&command=-c&command=echo+hi&input=1&output=1&tty=1", "/exec/token1"},
		{"GET", "/exec/default/web-node-a/mirror-uid/app?command=ls&output=1&error=1", "/exec/token1"},
		{"POST", "/attach/default/web-node-a/app?input=1&output=1", "/attach/token2"},
		{"POST", "/portForward/default/web-node-a", "/portforward/token3"},
		{"POST", "/portForward/default/web-node-a/mirror-uid?port=80,8080", "/portforward/token3"},
	}
	for _, tc := range tests {
		code, br, conn := dialUpgrade(t, addr, tc.method, tc.path, "admin-token")
		if code != http.StatusSwitchingProtocols {
			t.Errorf("%s %s: %d, want 101", tc.method, tc.path, code)
			continue
		}
		line, _ := br.ReadString('\n')
		if want := fmt.Sprintf("path=%s auth=\"\"\n", tc.wantBackend); line != want {
			t.Errorf("%s: backend saw %q, want %q (the token must not reach the runtime)", tc.path, line, want)
		}
		fmt.Fprint(conn, "ping\n")
		if echo, _ := br.ReadString('\n'); echo != "ping\n" {
			t.Errorf("%s: echo %q", tc.path, echo)
		}
	}
	if got := n.execReqs[0]; got.ContainerId != "app-2" || strings.Join(got.Cmd, "|") != "sh|-c|echo hi" || !got.Tty || !got.Stdin || !got.Stdout || got.Stderr {
		t.Errorf("exec request %+v", got)
	}
	if got := n.execReqs[1]; got.Tty || got.Stdin || !got.Stdout || !got.Stderr {
		t.Errorf("exec request %+v", got)
	}
	if got := n.pfReqs; got[0].PodSandboxId != "sb-web" || len(got[0].Port) != 0 || fmt.Sprint(got[1].Port) != "[80 8080]" {
		t.Errorf("port forward requests %+v", got)
	}

	refused := []struct {
		method, path string
		code         int
	}{
		{"POST", "/exec/default/web-node-a/app?command=ls", 400}, // no streams
		{"POST", "/exec/default/web-node-a/app?output=1", 400},   // no command
		{"POST", "/exec/default/web-node-a/other-uid/app?command=ls&output=1", 404},
		{"POST", "/exec/default/nope/app?command=ls&output=1", 404},
		{"POST", "/exec/default/web-node-a/nope?command=ls&output=1", 404},
		{"POST", "/exec/prod/api/app?command=ls&output=1", 400},   // not running
		{"POST", "/attach/default/web-node-a/idle?output=1", 400}, // never started
		{"POST", "/portForward/prod/api", 400},                    // sandbox not ready
		{"POST", "/portForward/default/web-node-a?port=http", 400},
	}
	for _, tc := range refused {
		if code, _, _ := dialUpgrade(t, addr, tc.method, tc.path, "admin-token"); code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
		}
	}
	if code, _, _ := dialUpgrade(t, addr, "POST", "/exec/default/web-node-a/app?command=ls&output=1", ""); code != 401 {
		t.Errorf("exec without credentials: %d", code)
	}

	// A plain (not upgraded) request cannot use a streaming URL.
	req, _ := http.NewRequest("POST", front.URL+"/exec/default/web-node-a/app?command=ls&output=1", nil)
	req.Header.Set("Authorization", "Bearer admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("exec without upgrade: %d, want 400", resp.StatusCode)
	}

	// The runtime refusing the session comes back to the caller.
	d := n.deps()
	d.Exec = func(context.Context, *runtimeapi.ExecRequest) (string, error) {
		return backend.URL + "/exec/expired", nil
	}
	front2 := httptest.NewServer(APIRoutes(d))
	defer front2.Close()
	if code, _, _ := dialUpgrade(t, strings.TrimPrefix(front2.URL, "http://"), "POST", "/exec/default/web-node-a/app?command=ls&output=1", ""); code != 404 {
		t.Errorf("runtime refused: %d, want its 404", code)
	}
	// A runtime URL that is not absolute is a server error.
	d.Exec = func(context.Context, *runtimeapi.ExecRequest) (string, error) { return "/exec/relative", nil }
	front3 := httptest.NewServer(APIRoutes(d))
	defer front3.Close()
	if code, _, _ := dialUpgrade(t, strings.TrimPrefix(front3.URL, "http://"), "POST", "/exec/default/web-node-a/app?command=ls&output=1", ""); code != 500 {
		t.Errorf("relative runtime URL: %d, want 500", code)
	}
}
