package podsync

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// fakeRuntime is an in-memory CRI runtime: enough state to feed
// runtime.PodStatus back into the Syncer, and a log of calls.
type fakeRuntime struct {
	mu    sync.Mutex
	clock clock.Clock
	calls []string
	seq   int

	images     map[string]string // name -> ID
	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer

	pullErr   error
	pullAuths []*runtimeapi.AuthConfig // auth of each PullImage call
	// acceptAuth, when set, decides a pull by its auth.
	acceptAuth func(*runtimeapi.AuthConfig) error
	// pullGate, when set, holds PullImage until it is closed or the
	// call's context ends.
	pullGate  chan struct{}
	createErr map[string]error // by container name
	startErr  map[string]error // by container name
	// onStop, when set, runs inside StopContainer (outside the lock).
	onStop func(id string, grace time.Duration)
	stops  map[string]time.Duration // container ID -> grace of the stop
}

type fakeSandbox struct {
	id      string
	config  *runtimeapi.PodSandboxConfig
	ready   bool
	created time.Time
	ip      string
}

type fakeContainer struct {
	id, sandboxID string
	config        *runtimeapi.ContainerConfig
	state         runtime.ContainerState
	created       time.Time
	finished      time.Time
	exitCode      int32
}

func newFakeRuntime(c clock.Clock) *fakeRuntime {
	return &fakeRuntime{
		clock:      c,
		images:     map[string]string{"busybox:1.35": "sha256:busybox"},
		sandboxes:  map[string]*fakeSandbox{},
		containers: map[string]*fakeContainer{},
		createErr:  map[string]error{},
		startErr:   map[string]error{},
		stops:      map[string]time.Duration{},
	}
}

func (f *fakeRuntime) record(call string) {
	f.calls = append(f.calls, call)
}

// takeCalls returns the calls since the last take. Concurrent calls are
// sorted within runs of the same verb so tests stay deterministic.
func (f *fakeRuntime) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeRuntime) nextID(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s%d", prefix, f.seq)
}

func (f *fakeRuntime) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig, _ string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("RunPodSandbox %s/%d", cfg.Metadata.Name, cfg.Metadata.Attempt))
	id := f.nextID("sb")
	sb := &fakeSandbox{id: id, config: cfg, ready: true, created: f.clock.Now().Add(time.Duration(f.seq))}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		sb.ip = "10.88.0." + strings.TrimPrefix(id, "sb")
	}
	f.sandboxes[id] = sb
	return id, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StopPodSandbox " + id)
	sb, ok := f.sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %s: %w", id, cri.ErrNotFound)
	}
	sb.ready = false
	for _, c := range f.containers {
		if c.sandboxID == id && c.state == runtime.ContainerStateRunning {
			c.state, c.exitCode, c.finished = runtime.ContainerStateExited, 137, f.clock.Now()
		}
	}
	return nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemovePodSandbox " + id)
	delete(f.sandboxes, id)
	for cid, c := range f.containers {
		if c.sandboxID == id {
			delete(f.containers, cid)
		}
	}
	return nil
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("PodSandboxStatus " + id)
	sb, ok := f.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, cri.ErrNotFound)
	}
	return &runtimeapi.PodSandboxStatus{Id: id, Network: &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip}}, nil
}

func (f *fakeRuntime) CreateContainer(_ context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := cfg.Metadata.Name
	f.record(fmt.Sprintf("CreateContainer %s/%d", name, cfg.Metadata.Attempt))
	if err := f.createErr[name]; err != nil {
		return "", err
	}
	if _, ok := f.sandboxes[sandboxID]; !ok {
		return "", fmt.Errorf("sandbox %s: %w", sandboxID, cri.ErrNotFound)
	}
	id := f.nextID("c")
	f.containers[id] = &fakeContainer{id: id, sandboxID: sandboxID, config: cfg,
		state: runtime.ContainerStateCreated, created: f.clock.Now().Add(time.Duration(f.seq))}
	return id, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	f.record("StartContainer " + c.config.Metadata.Name)
	if err := f.startErr[c.config.Metadata.Name]; err != nil {
		return err
	}
	c.state = runtime.ContainerStateRunning
	return nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	c, ok := f.containers[id]
	name := id
	if ok {
		name = c.config.Metadata.Name
	}
	f.record("StopContainer " + name)
	f.stops[id] = grace
	onStop := f.onStop
	f.mu.Unlock()
	if onStop != nil {
		onStop(id, grace)
	}
	if !ok {
		return fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.state != runtime.ContainerStateExited {
		c.state, c.exitCode, c.finished = runtime.ContainerStateExited, 137, f.clock.Now()
	}
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveContainer " + id)
	delete(f.containers, id)
	return nil
}

func (f *fakeRuntime) ImageStatus(_ context.Context, ref string) (*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ImageStatus " + ref)
	if id, ok := f.images[ref]; ok {
		return &runtimeapi.Image{Id: id, RepoTags: []string{ref}}, nil
	}
	return nil, nil
}

func (f *fakeRuntime) PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	gate := f.pullGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", fmt.Errorf("pull image %s: %w", ref, ctx.Err())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("PullImage " + ref)
	f.pullAuths = append(f.pullAuths, auth)
	if f.pullErr != nil {
		return "", f.pullErr
	}
	if f.acceptAuth != nil {
		if err := f.acceptAuth(auth); err != nil {
			return "", err
		}
	}
	id := "sha256:" + ref
	f.images[ref] = id
	return id, nil
}

// exit makes the latest instance of a container exit now.
func (f *fakeRuntime) exit(name string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var latest *fakeContainer
	for _, c := range f.containers {
		if c.config.Metadata.Name == name && (latest == nil || c.created.After(latest.created)) {
			latest = c
		}
	}
	latest.state, latest.exitCode, latest.finished = runtime.ContainerStateExited, code, f.clock.Now()
}

// killSandbox makes a sandbox die (pause process gone).
func (f *fakeRuntime) killSandbox(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[id].ready = false
}

// status builds the runtime.PodStatus the CRI client would report.
func (f *fakeRuntime) status(uid types.UID) *runtime.PodStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := &runtime.PodStatus{UID: uid}
	for _, sb := range f.sandboxes {
		if sb.config.Metadata.Uid != string(uid) {
			continue
		}
		ps.Name, ps.Namespace = sb.config.Metadata.Name, sb.config.Metadata.Namespace
		st := runtime.SandboxStateNotReady
		if sb.ready {
			st = runtime.SandboxStateReady
		}
		s := &runtime.SandboxStatus{ID: sb.id, State: st, CreatedAt: sb.created, Attempt: sb.config.Metadata.Attempt,
			IP: sb.ip, HostNetwork: sb.ip == ""}
		if sb.ip != "" {
			s.IPs = []string{sb.ip}
		}
		ps.Sandboxes = append(ps.Sandboxes, s)
	}
	for _, c := range f.containers {
		id, err := cri.ParseContainerIdentity(c.config.Labels, c.config.Annotations)
		if err != nil || id.PodUID != uid {
			continue
		}
		ps.Containers = append(ps.Containers, &runtime.ContainerStatus{
			ID: c.id, Name: id.ContainerName, State: c.state, CreatedAt: c.created, FinishedAt: c.finished,
			ExitCode: c.exitCode, Hash: id.Hash, SpecHash: id.SpecHash, RestartCount: id.RestartCount, SandboxID: c.sandboxID,
			TerminationGracePeriod: id.TerminationGracePeriod,
		})
	}
	sort.Slice(ps.Sandboxes, func(i, j int) bool { return ps.Sandboxes[i].CreatedAt.After(ps.Sandboxes[j].CreatedAt) })
	sort.Slice(ps.Containers, func(i, j int) bool { return ps.Containers[i].CreatedAt.After(ps.Containers[j].CreatedAt) })
	return ps
}

var _ Runtime = (*fakeRuntime)(nil)
