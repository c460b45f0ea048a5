package deviceplugin

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const testResource = "example.com/dev"

// fakePlugin is a device plugin serving on a socket in dir.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices  chan []*pluginapi.Device
	srv      *grpc.Server
	mu       sync.Mutex
	prestart [][]string
}

func startPlugin(t *testing.T, dir, name string, devs ...string) *fakePlugin {
	t.Helper()
	p := &fakePlugin{devices: make(chan []*pluginapi.Device, 10), srv: grpc.NewServer()}
	pluginapi.RegisterDevicePluginServer(p.srv, p)
	lis, err := net.Listen("unix", filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	go p.srv.Serve(lis)
	t.Cleanup(p.srv.Stop)
	p.send(devs, nil)
	return p
}

func (p *fakePlugin) send(healthy, unhealthy []string) {
	var out []*pluginapi.Device
	for _, d := range healthy {
		out = append(out, &pluginapi.Device{ID: d, Health: pluginapi.Healthy})
	}
	for _, d := range unhealthy {
		out = append(out, &pluginapi.Device{ID: d, Health: pluginapi.Unhealthy})
	}
	p.devices <- out
}

func (p *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{PreStartRequired: true, GetPreferredAllocationAvailable: true}, nil
}

func (p *fakePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		select {
		case d := <-p.devices:
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: d}); err != nil {
				return err
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// GetPreferredAllocation prefers the last available device.
func (p *fakePlugin) GetPreferredAllocation(_ context.Context, r *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	a := r.ContainerRequests[0].AvailableDeviceIDs
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: a[len(a)-1:]}}}, nil
}

func (p *fakePlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	var out pluginapi.AllocateResponse
	for _, c := range r.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{"DEVS": c.DevicesIds[0]},
			Mounts:      []*pluginapi.Mount{{ContainerPath: "/dev-" + c.DevicesIds[0], HostPath: "/tmp/" + c.DevicesIds[0]}},
			Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "/dev/null"}},
			Annotations: map[string]string{"a": "b"},
			CdiDevices:  []*pluginapi.CDIDevice{{Name: "example.com/dev=" + c.DevicesIds[0]}},
		})
	}
	return &out, nil
}

func (p *fakePlugin) PreStartContainer(_ context.Context, r *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prestart = append(p.prestart, r.DevicesIds)
	return &pluginapi.PreStartContainerResponse{}, nil
}

func register(t *testing.T, dir string, req *pluginapi.RegisterRequest) error {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, RegistrationSocket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, req, grpc.WaitForReady(true))
	return err
}

func runManager(t *testing.T, dir string) *Manager {
	t.Helper()
	m, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return m
}

// waitFor polls cond: the manager's state follows a stream, with no
// event to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func devPod(uid string, n int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metaUID(uid), Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{testResource: *resource.NewQuantity(n, resource.DecimalSI)}}}}}}
}

func tempDir(t *testing.T) string {
	// Unix socket paths are short: t.TempDir can be too long.
	d, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestManagerRegistersAllocatesAndSurvivesRestart(t *testing.T) {
	dir := tempDir(t)
	m := runManager(t, dir)
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "cpu", Endpoint: "p.sock"}); err == nil {
		t.Fatal("registration of a native resource accepted")
	}
	p := startPlugin(t, dir, "p.sock", "d1", "d2", "d3")
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: testResource, Endpoint: "p.sock"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 healthy devices", func() bool { return m.Resources()[testResource] == Counts{3, 3} })
	p.send([]string{"d1", "d2"}, []string{"d3"})
	waitFor(t, "d3 unhealthy", func() bool { return m.Resources()[testResource] == Counts{3, 2} })

	ctx := context.Background()
	if err := m.Admit(ctx, devPod("pod1", 1)); err != nil {
		t.Fatal(err)
	}
	// The plugin prefers the last free device.
	if got := m.Allocations(); len(got) != 1 || !reflect.DeepEqual(got[0].Devices, []string{"d2"}) {
		t.Fatalf("allocations = %v", got)
	}
	err := m.Admit(ctx, devPod("pod2", 2))
	var ae *AdmissionError
	if !errors.As(err, &ae) || ae.Message != "Allocate failed due to requested number of devices unavailable for example.com/dev. Requested: 2, Available: 1, which is unexpected" {
		t.Fatalf("pod2 admission = %v", err)
	}
	pod1 := devPod("pod1", 1)
	cfg := &runtimeapi.ContainerConfig{}
	if err := m.Apply(ctx, pod1, &pod1.Spec.Containers[0], cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Envs) != 1 || string(cfg.Envs[0].Value) != "d2" || len(cfg.Mounts) != 1 || len(cfg.Devices) != 1 || len(cfg.CDIDevices) != 1 || cfg.Annotations["a"] != "b" {
		t.Errorf("config = %v", cfg)
	}
	p.mu.Lock()
	if !reflect.DeepEqual(p.prestart, [][]string{{"d2"}}) {
		t.Errorf("PreStartContainer calls = %v", p.prestart)
	}
	p.mu.Unlock()

	// A second manager (nodelet restarted) reads the checkpoint: pod1
	// keeps d2, a new pod is refused until the plugin is back.
	m2, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Admit(ctx, devPod("pod1", 1)); err != nil {
		t.Fatalf("re-admission of pod1: %v", err)
	}
	if !reflect.DeepEqual(m2.Allocations(), m.Allocations()) {
		t.Errorf("allocations after restart = %v, want %v", m2.Allocations(), m.Allocations())
	}
	if err := m2.Admit(ctx, devPod("pod3", 1)); err == nil {
		t.Error("a pod admitted before its plugin registered again")
	}

	// The stream ends: devices unhealthy, capacity kept.
	p.srv.Stop()
	waitFor(t, "devices unhealthy", func() bool { return m.Resources()[testResource] == Counts{3, 0} })
	if err := m.Apply(ctx, pod1, &pod1.Spec.Containers[0], &runtimeapi.ContainerConfig{}); err == nil {
		t.Error("Apply with the plugin gone succeeded")
	}
	// Re-registration on a new socket replaces the endpoint.
	startPlugin(t, dir, "p2.sock", "d1", "d2")
	if err := register(t, dir, &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: testResource, Endpoint: "p2.sock"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "re-registered", func() bool { return m.Resources()[testResource] == Counts{2, 2} })
	if err := m.Admit(ctx, devPod("pod4", 1)); err != nil {
		t.Fatal(err)
	}
	if got := m.Allocations(); len(got) != 2 || !reflect.DeepEqual(got[1].Devices, []string{"d1"}) {
		t.Fatalf("allocations = %v", got)
	}
	if err := m.Release(func(u types.UID) bool { return u == "pod4" }); err != nil {
		t.Fatal(err)
	}
	if got := m.Allocations(); len(got) != 1 || got[0].PodUID != "pod4" {
		t.Fatalf("after release: %v", got)
	}
}

func TestCheckpointCorruptIsAnError(t *testing.T) {
	dir := tempDir(t)
	if err := os.WriteFile(filepath.Join(dir, CheckpointFile), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir); err == nil {
		t.Error("a corrupt checkpoint was ignored")
	}
}

func TestApplyResponse(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Envs:   []*runtimeapi.KeyValue{{Key: "A", Value: []byte("old")}},
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/m", HostPath: "/old"}, {ContainerPath: "/keep", HostPath: "/k"}},
	}
	ApplyResponse(cfg, &pluginapi.ContainerAllocateResponse{
		Envs:       map[string]string{"A": "new", "B": "b", "": "x"},
		Mounts:     []*pluginapi.Mount{{ContainerPath: "/m", HostPath: "/new", ReadOnly: true}, {ContainerPath: "", HostPath: "/x"}},
		Devices:    []*pluginapi.DeviceSpec{{ContainerPath: "/dev/a", HostPath: "/dev/null"}},
		CdiDevices: []*pluginapi.CDIDevice{{Name: "v/c=1"}, {Name: "v/c=1"}, {}},
	})
	env := map[string]string{}
	for _, e := range cfg.Envs {
		env[e.Key] = string(e.Value)
	}
	if !reflect.DeepEqual(env, map[string]string{"A": "new", "B": "b"}) {
		t.Errorf("envs = %v", env)
	}
	if len(cfg.Mounts) != 2 || cfg.Mounts[1].HostPath != "/new" || !cfg.Mounts[1].Readonly {
		t.Errorf("mounts = %v", cfg.Mounts)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].Permissions != "mrw" {
		t.Errorf("devices = %v", cfg.Devices)
	}
	if len(cfg.CDIDevices) != 1 {
		t.Errorf("CDI devices = %v", cfg.CDIDevices)
	}
}

func metaUID(uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}
}
