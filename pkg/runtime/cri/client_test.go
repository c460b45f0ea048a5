package cri

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCRI serves canned sandboxes and containers and counts calls.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu         sync.Mutex
	calls      map[string]int
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	ips        map[string]string // sandbox ID -> IP
	gone       map[string]bool   // container IDs whose status is NotFound
	exit       map[string]int32  // container ID -> exit code
	stopped    map[string]int64  // container ID -> stop timeout
	info       map[string]string // sandbox ID -> verbose status info
	// statsLeft is how long ListPodSandboxStats had before its deadline.
	statsLeft time.Duration
}

func (f *fakeCRI) count(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
}

func (f *fakeCRI) takeCalls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = map[string]int{}
	return c
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.count("Version")
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeApiVersion: "v1"}, nil
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, r *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.count("ListPodSandbox")
	var out []*runtimeapi.PodSandbox
	for _, sb := range f.sandboxes {
		if matches(r.GetFilter().GetLabelSelector(), sb.Labels) {
			out = append(out, sb)
		}
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeCRI) ListContainers(_ context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.count("ListContainers")
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if matches(r.GetFilter().GetLabelSelector(), c.Labels) {
			out = append(out, c)
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.count("PodSandboxStatus")
	for _, sb := range f.sandboxes {
		if sb.Id == r.PodSandboxId {
			return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
				Id: sb.Id, State: sb.State, Network: &runtimeapi.PodSandboxNetworkStatus{Ip: f.ips[sb.Id]},
				Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{}}},
			}, Info: verboseInfo(r.Verbose, f.info[sb.Id])}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "no such sandbox")
}

func verboseInfo(verbose bool, info string) map[string]string {
	if !verbose {
		return nil
	}
	return map[string]string{"info": info}
}

func (f *fakeCRI) ListPodSandboxStats(ctx context.Context, _ *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f.count("ListPodSandboxStats")
	deadline, _ := ctx.Deadline()
	f.mu.Lock()
	f.statsLeft = time.Until(deadline)
	f.mu.Unlock()
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range f.sandboxes {
		out = append(out, &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: sb.Id}})
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}

func (f *fakeCRI) ContainerStatus(_ context.Context, r *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.count("ContainerStatus")
	for _, c := range f.containers {
		if c.Id == r.ContainerId && !f.gone[c.Id] {
			return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
				Id: c.Id, State: c.State, CreatedAt: c.CreatedAt, StartedAt: c.CreatedAt + 1, FinishedAt: c.CreatedAt + 2,
				ExitCode: f.exit[c.Id], Image: c.Image, ImageRef: c.ImageRef, LogPath: "/logs/" + c.Id,
			}}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "no such container")
}

func (f *fakeCRI) StopContainer(_ context.Context, r *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.count("StopContainer")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.ContainerId == "missing" {
		return nil, status.Error(codes.NotFound, "container \"missing\" not found")
	}
	f.stopped[r.ContainerId] = r.Timeout
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeCRI) ImageStatus(_ context.Context, r *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	f.count("ImageStatus")
	if r.Image.Image == "present:1" {
		return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:p"}}, nil
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

func serve(t *testing.T, f *fakeCRI) string {
	t.Helper()
	f.calls = map[string]int{}
	f.stopped = map[string]int64{}
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return sock
}

func dial(t *testing.T, f *fakeCRI) *Client {
	t.Helper()
	c, err := Dial(context.Background(), "unix://"+serve(t, f))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	f.takeCalls()
	return c
}

func ctrOf(id, sandbox, pod, name string, attempt uint32, created int64, state runtimeapi.ContainerState) *runtimeapi.Container {
	ident := ContainerIdentity{PodName: pod, PodNamespace: "ns", PodUID: types.UID("uid-" + pod), ContainerName: name, Hash: 0xabc, RestartCount: int(attempt)}
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sandbox, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image: &runtimeapi.ImageSpec{Image: "busybox"}, ImageRef: "sha256:b", State: state, CreatedAt: created,
		Labels: ident.Labels(), Annotations: ident.Annotations(),
	}
}

func sandboxOf(id, pod string, attempt uint32, created int64, ready, hostNetwork bool) *runtimeapi.PodSandbox {
	ident := SandboxIdentity{PodName: pod, PodNamespace: "ns", PodUID: types.UID("uid-" + pod), HostNetwork: hostNetwork}
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Name: pod, Namespace: "ns", Uid: "uid-" + pod, Attempt: attempt},
		State: state, CreatedAt: created, Labels: ident.Labels(), Annotations: ident.Annotations()}
}

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

func TestPodState(t *testing.T) {
	f := &fakeCRI{
		sandboxes: []*runtimeapi.PodSandbox{
			sandboxOf("sb-old", "web", 0, 100, false, false),
			sandboxOf("sb-new", "web", 1, 200, true, false),
			sandboxOf("sb-other", "db", 0, 150, true, false),
		},
		containers: []*runtimeapi.Container{
			ctrOf("a0", "sb-old", "web", "a", 0, 110, exited),
			ctrOf("a2", "sb-new", "web", "a", 2, 230, running),
			ctrOf("a1", "sb-new", "web", "a", 1, 210, exited),
			ctrOf("b0", "sb-new", "web", "b", 0, 220, running),
			ctrOf("gone", "sb-new", "web", "c", 0, 240, running),
			ctrOf("x0", "sb-other", "db", "x", 0, 160, running),
		},
		ips:  map[string]string{"sb-new": "10.88.0.7"},
		gone: map[string]bool{"gone": true},
		exit: map[string]int32{"a1": 2},
	}
	c := dial(t, f)
	st, err := c.PodState(context.Background(), "uid-web")
	if err != nil {
		t.Fatalf("PodState: %v", err)
	}
	want := map[string]int{"ListPodSandbox": 1, "ListContainers": 1, "PodSandboxStatus": 1, "ContainerStatus": 4}
	if got := f.takeCalls(); !mapsEqual(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if len(st.Sandboxes) != 2 || st.Sandboxes[0].Id != "sb-new" || st.Sandboxes[1].Id != "sb-old" ||
		st.SandboxStatus.GetNetwork().GetIp() != "10.88.0.7" {
		t.Errorf("sandboxes = %v, status %v", st.Sandboxes, st.SandboxStatus)
	}
	var ids, detailed []string
	for i, c := range st.Containers {
		ids = append(ids, c.Id)
		if st.ContainerStatuses[i] != nil {
			detailed = append(detailed, st.ContainerStatuses[i].Id)
		}
	}
	if got := ids; !equal(got, []string{"a2", "b0", "a1", "a0"}) {
		t.Errorf("containers = %v, want newest first without the vanished one", got)
	}
	// The third instance is described from the list alone.
	if !equal(detailed, []string{"a2", "b0", "a1"}) {
		t.Errorf("detailed = %v, want the newest two of each name", detailed)
	}
	if st.ContainerStatuses[2].ExitCode != 2 {
		t.Errorf("previous a = %+v, want its exit details", st.ContainerStatuses[2])
	}
}

func TestPodStateHostNetworkSkipsSandboxStatus(t *testing.T) {
	f := &fakeCRI{sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb", "web", 0, 1, true, true)}}
	c := dial(t, f)
	st, err := c.PodState(context.Background(), "uid-web")
	if err != nil {
		t.Fatal(err)
	}
	if calls := f.takeCalls(); calls["PodSandboxStatus"] != 0 {
		t.Errorf("calls = %v, want no PodSandboxStatus", calls)
	}
	if len(st.Sandboxes) != 1 || st.SandboxStatus != nil {
		t.Errorf("state = %+v, want the listed sandbox alone", st)
	}
}

func TestPodStateOfUnknownPod(t *testing.T) {
	c := dial(t, &fakeCRI{})
	st, err := c.PodState(context.Background(), "nope")
	if err != nil || len(st.Sandboxes)+len(st.Containers) != 0 {
		t.Errorf("PodState = %+v, %v; want an empty state", st, err)
	}
}

func TestListState(t *testing.T) {
	f := &fakeCRI{
		sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb1", "web", 0, 100, true, true), sandboxOf("sb2", "db", 0, 150, true, false)},
		containers: []*runtimeapi.Container{
			ctrOf("w0", "sb1", "web", "a", 0, 110, exited), ctrOf("w1", "sb1", "web", "a", 1, 120, running),
			ctrOf("d0", "sb2", "db", "x", 0, 160, running),
		},
	}
	c := dial(t, f)
	st, err := c.ListState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if calls := f.takeCalls(); !mapsEqual(calls, map[string]int{"ListPodSandbox": 1, "ListContainers": 1}) {
		t.Errorf("calls = %v, want exactly the two lists", calls)
	}
	if len(st.Sandboxes) != 2 || st.Sandboxes[0].Id != "sb2" || len(st.Containers) != 3 || st.Containers[0].Id != "d0" ||
		len(st.ContainerStatuses) != 0 {
		t.Errorf("state = %+v, want everything listed, newest first, no details", st)
	}
}

func TestStopContainerTimeoutAndErrors(t *testing.T) {
	f := &fakeCRI{}
	c := dial(t, f)
	ctx := context.Background()
	for _, tt := range []struct {
		grace time.Duration
		want  int64
	}{{0, 0}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {30 * time.Second, 30}} {
		if err := c.StopContainer(ctx, "c1", tt.grace); err != nil {
			t.Fatal(err)
		}
		if got := f.stopped["c1"]; got != tt.want {
			t.Errorf("grace %v sent as %ds, want %ds", tt.grace, got, tt.want)
		}
	}
	err := c.StopContainer(ctx, "missing", time.Second)
	if !errors.Is(err, ErrNotFound) || status.Code(err) != codes.NotFound {
		t.Errorf("err = %v: Is(ErrNotFound)=%v code=%v", err, errors.Is(err, ErrNotFound), status.Code(err))
	}
	if _, err := c.ContainerStats(ctx, "x"); !errors.Is(err, ErrUnimplemented) {
		t.Errorf("unimplemented call: err = %v", err)
	}
}

func TestSandboxPID(t *testing.T) {
	f := &fakeCRI{
		sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb", "web", 0, 1, true, false), sandboxOf("nopid", "db", 0, 1, true, false),
			sandboxOf("garbled", "mq", 0, 1, true, false)},
		info: map[string]string{"sb": `{"pid": 42, "image": "pause"}`, "nopid": `{"image": "pause"}`, "garbled": `{`},
	}
	c := dial(t, f)
	for _, tt := range []struct {
		id      string
		want    int
		wantErr error
	}{
		{id: "sb", want: 42},
		{id: "nopid"},
		{id: "garbled"},
		{id: "gone", wantErr: ErrNotFound},
	} {
		pid, err := c.SandboxPID(context.Background(), tt.id)
		switch {
		case tt.want > 0 && (err != nil || pid != tt.want):
			t.Errorf("%s: pid %d, %v; want %d", tt.id, pid, err, tt.want)
		case tt.want == 0 && err == nil:
			t.Errorf("%s: pid %d, want an error", tt.id, pid)
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: err %v, want %v", tt.id, err, tt.wantErr)
		}
	}
}

// TestListPodSandboxStatsBoundedByTimeout: stats calls get the client's one
// per-call timeout, as every other ordinary call.
func TestListPodSandboxStatsBoundedByTimeout(t *testing.T) {
	f := &fakeCRI{sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb", "web", 0, 1, true, false)}}
	c, err := Dial(context.Background(), "unix://"+serve(t, f), Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.ListPodSandboxStats(context.Background(), nil)
	if err != nil || len(st) != 1 || st[0].GetAttributes().GetId() != "sb" {
		t.Fatalf("ListPodSandboxStats = %v, %v", st, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statsLeft <= 0 || f.statsLeft > time.Minute {
		t.Errorf("runtime saw %v left, want at most the one-minute timeout", f.statsLeft)
	}
}

func TestImageStatusAbsent(t *testing.T) {
	c := dial(t, &fakeCRI{})
	img, err := c.ImageStatus(context.Background(), "absent:1")
	if err != nil || img != nil {
		t.Errorf("absent image = %v, %v; want nil, nil", img, err)
	}
	img, err = c.ImageStatus(context.Background(), "present:1")
	if err != nil || img.GetId() != "sha256:p" {
		t.Errorf("present image = %v, %v", img, err)
	}
}

func TestDial(t *testing.T) {
	f := &fakeCRI{}
	sock := serve(t, f)
	c, err := Dial(context.Background(), sock) // a bare path works too
	if err != nil {
		t.Fatalf("Dial(%s): %v", sock, err)
	}
	_ = c.Close()
	for _, bad := range []string{"tcp://127.0.0.1:1234", "unix://", "npipe:////./pipe/x"} {
		if _, err := Dial(context.Background(), bad); err == nil {
			t.Errorf("Dial(%q) succeeded", bad)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = Dial(ctx, "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Dial of a missing socket: %v, want ErrUnavailable", err)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pullCRI answers PullImage and records what each call carried.
type pullCRI struct {
	fakeCRI
	deadlines []bool
	auths     []*runtimeapi.AuthConfig
}

func (f *pullCRI) PullImage(ctx context.Context, r *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, has := ctx.Deadline()
	f.deadlines = append(f.deadlines, has)
	f.auths = append(f.auths, r.GetAuth())
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + r.GetImage().GetImage()}, nil
}

// TestPullImageNoFixedTimeout: a pull is bounded only by the caller's
// context (a large image may take long; upstream sets no deadline either),
// unless Options.PullTimeout asks for one; the auth reaches the runtime.
func TestPullImageNoFixedTimeout(t *testing.T) {
	f := &pullCRI{}
	f.calls = map[string]int{}
	f.stopped = map[string]int64{}
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	ctx := context.Background()
	c, err := Dial(ctx, "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	auth := &runtimeapi.AuthConfig{Username: "u", Password: "p"}
	if ref, err := c.PullImage(ctx, "reg:5000/app", auth, nil); err != nil || ref != "sha256:reg:5000/app" {
		t.Fatalf("PullImage = %q, %v", ref, err)
	}
	bounded, err := Dial(ctx, "unix://"+sock, Options{PullTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer bounded.Close()
	if _, err := bounded.PullImage(ctx, "app", nil, nil); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.deadlines) != 2 || f.deadlines[0] || !f.deadlines[1] {
		t.Errorf("deadlines seen by the runtime = %v, want [false true]", f.deadlines)
	}
	if got := f.auths[0]; got.GetUsername() != "u" || got.GetPassword() != "p" {
		t.Errorf("auth = %v", got)
	}
}
