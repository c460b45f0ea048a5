package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// rpcTimeout bounds each call to a plugin but ListAndWatch and
// PreStartContainer (upstream's 30 s).
const rpcTimeout = 10 * time.Second

// Manager owns the device plugins: registration, their devices and the
// devices held by containers. Its methods are safe for concurrent use.
type Manager struct {
	dir string
	now func() time.Time

	mu        sync.Mutex
	resources map[string]*pluginResource
	allocs    []Allocation

	// runCtx and wg own the endpoint goroutines; set by Run.
	runCtx context.Context
	wg     sync.WaitGroup
}

// resource is one registered resource name and its plugin's devices.
type pluginResource struct {
	ep        *endpoint // nil: no plugin (only known from the checkpoint)
	healthy   map[string]bool
	unhealthy map[string]bool
	stopped   time.Time
}

// endpoint is one registration of a plugin.
type endpoint struct {
	socket  string
	options *pluginapi.DevicePluginOptions
	conn    *grpc.ClientConn
	client  pluginapi.DevicePluginClient
	cancel  context.CancelFunc
}

// New loads the allocation checkpoint from dir (<root-dir>/device-plugins),
// creating the dir. Nothing is served until Run.
func New(dir string) (*Manager, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("device plugin dir: %w", err)
	}
	allocs, err := readCheckpoint(filepath.Join(dir, CheckpointFile))
	if err != nil {
		return nil, err
	}
	m := &Manager{dir: dir, now: time.Now, resources: map[string]*pluginResource{}, allocs: allocs}
	// Resources holding devices are known before their plugin comes back,
	// with no healthy device: a new pod asking for one is refused rather
	// than started without it.
	for _, a := range allocs {
		m.resourceLocked(a.Resource)
	}
	return m, nil
}

func (m *Manager) resourceLocked(name string) *pluginResource {
	r := m.resources[name]
	if r == nil {
		r = &pluginResource{healthy: map[string]bool{}, unhealthy: map[string]bool{}, stopped: m.now()}
		m.resources[name] = r
	}
	return r
}

// Run serves the registration socket until ctx is done, then stops every
// plugin stream. Stale sockets in the dir are removed first: plugins
// watching it take their own socket's removal or kubelet.sock's creation
// as the signal to register again, as with upstream.
func (m *Manager) Run(ctx context.Context) error {
	m.removeStaleSockets()
	sock := filepath.Join(m.dir, RegistrationSocket)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		// Not fatal to the node: pods without devices still run; the
		// error says why no plugin can register.
		klog.ErrorS(err, "Device plugin registration socket: no device plugin can register", "socket", sock)
		<-ctx.Done()
		return nil
	}
	m.mu.Lock()
	m.runCtx = ctx
	m.mu.Unlock()
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, registration{m: m})
	klog.InfoS("Device plugin registration serving", "socket", sock)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-served
		err = nil
	case err = <-served:
		err = fmt.Errorf("device plugin registration: %w", err)
	}
	m.mu.Lock()
	for _, r := range m.resources {
		if r.ep != nil {
			r.ep.cancel()
		}
	}
	m.runCtx = nil
	m.mu.Unlock()
	m.wg.Wait()
	os.Remove(sock)
	return err
}

func (m *Manager) removeStaleSockets() {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		klog.ErrorS(err, "Read device plugin dir")
		return
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSocket != 0 {
			if err := os.Remove(filepath.Join(m.dir, e.Name())); err != nil {
				klog.ErrorS(err, "Remove stale device plugin socket", "socket", e.Name())
			}
		}
	}
}

// registration is the v1beta1 Registration service.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	m *Manager
}

func (r registration) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if err := ValidateRegistration(req); err != nil {
		klog.InfoS("Device plugin registration refused", "resource", req.GetResourceName(), "endpoint", req.GetEndpoint(), "err", err)
		return nil, err
	}
	r.m.mu.Lock()
	runCtx := r.m.runCtx
	if runCtx == nil || runCtx.Err() != nil {
		r.m.mu.Unlock()
		return nil, errors.New("nodelet is stopping")
	}
	r.m.wg.Add(1)
	r.m.mu.Unlock()
	klog.InfoS("Device plugin registered", "resource", req.ResourceName, "endpoint", req.Endpoint)
	// As upstream, the plugin is dialled after Register answers: a plugin
	// may start serving only once registered.
	go func() {
		defer r.m.wg.Done()
		r.m.runEndpoint(runCtx, req.ResourceName, filepath.Join(r.m.dir, req.Endpoint), req.Options)
	}()
	return &pluginapi.Empty{}, nil
}

// runEndpoint dials a plugin, replaces the resource's previous endpoint
// and follows ListAndWatch until the stream ends or ctx is done.
func (m *Manager) runEndpoint(ctx context.Context, name, socket string, regOpts *pluginapi.DevicePluginOptions) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		klog.ErrorS(err, "Dial device plugin", "resource", name, "socket", socket)
		return
	}
	defer conn.Close()
	client := pluginapi.NewDevicePluginClient(conn)
	octx, ocancel := context.WithTimeout(ctx, rpcTimeout)
	opts, err := client.GetDevicePluginOptions(octx, &pluginapi.Empty{})
	ocancel()
	if err != nil {
		klog.ErrorS(err, "Device plugin options", "resource", name, "socket", socket)
		if regOpts == nil {
			return
		}
		opts = regOpts
	}
	stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		klog.ErrorS(err, "Device plugin ListAndWatch", "resource", name, "socket", socket)
		return
	}
	ep := &endpoint{socket: socket, options: opts, conn: conn, client: client, cancel: cancel}
	m.mu.Lock()
	r := m.resourceLocked(name)
	if r.ep != nil {
		r.ep.cancel() // a re-registration replaces the old endpoint
	}
	r.ep, r.stopped = ep, time.Time{}
	m.mu.Unlock()
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				klog.InfoS("Device plugin stream ended: its devices are unhealthy", "resource", name, "socket", socket, "err", err)
			}
			break
		}
		m.setDevices(name, ep, resp.GetDevices())
	}
	m.mu.Lock()
	if r := m.resources[name]; r != nil && r.ep == ep {
		r.ep, r.stopped = nil, m.now()
		for d := range r.healthy {
			r.unhealthy[d] = true
		}
		clear(r.healthy)
	}
	m.mu.Unlock()
}

// setDevices takes a ListAndWatch update of endpoint ep (ignored when ep
// was replaced meanwhile): the full device list.
func (m *Manager) setDevices(name string, ep *endpoint, devs []*pluginapi.Device) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.resources[name]
	if r == nil || r.ep != ep {
		return
	}
	clear(r.healthy)
	clear(r.unhealthy)
	for _, d := range devs {
		if d.GetID() == "" {
			continue
		}
		if d.GetHealth() == pluginapi.Healthy {
			r.healthy[d.ID] = true
		} else {
			r.unhealthy[d.ID] = true
		}
	}
	klog.V(2).InfoS("Device plugin devices", "resource", name, "healthy", len(r.healthy), "unhealthy", len(r.unhealthy))
}

// Resources are the node's device figures now, for the node status;
// resources gone for longer than the grace period are reported with 0
// until their plugin registers again.
func (m *Manager) Resources() map[v1.ResourceName]Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	counts, _ := NodeCounts(m.statesLocked(), m.now())
	return counts
}

func (m *Manager) statesLocked() map[string]ResourceState {
	out := make(map[string]ResourceState, len(m.resources))
	for name, r := range m.resources {
		out[name] = ResourceState{Healthy: keys(r.healthy), Unhealthy: keys(r.unhealthy), Stopped: r.stopped}
	}
	return out
}

func keys(s map[string]bool) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	return out
}

func (m *Manager) checkpointPath() string { return filepath.Join(m.dir, CheckpointFile) }
