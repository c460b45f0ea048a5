// Package podsync brings a pod's containers in line with its spec through
// the CRI: it computes a plan (package plan) from the spec and the runtime
// status, then executes it - pulling images, creating the sandbox, creating
// and starting containers, stopping them with their grace period - and
// reports per-container waiting reasons, crash-loop and image-pull back-off,
// and events on the pod.
//
// A Syncer holds no per-pod state besides back-off counters, so one is
// shared by all pod workers; the caller serialises syncs of the same pod.
package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/runtime/lifecycle"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
)

// SandboxRuntime is the sandbox half of the CRI the Syncer uses.
type SandboxRuntime interface {
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatus, error)
}

// ContainerRuntime is the container half of the CRI the Syncer uses.
type ContainerRuntime interface {
	CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
}

// ImageService is the image part of the CRI the Syncer uses.
type ImageService interface {
	// ImageStatus returns nil, nil for an absent image.
	ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error)
	PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// Runtime is everything the Syncer needs from the container runtime;
// *cri.Client implements it.
type Runtime interface {
	SandboxRuntime
	ContainerRuntime
	ImageService
}

var _ Runtime = (*cri.Client)(nil)

// Metrics observes runtime operations done on behalf of pods. Optional.
type Metrics interface {
	// ObserveOperation records one operation (see the Op constants), how
	// long it took and whether it failed.
	ObserveOperation(op string, d time.Duration, err error)
}

// ImagePullMetrics, when Metrics implements it too, records each
// successful image pull with the pulled image's size (0: unknown).
type ImagePullMetrics interface {
	ObserveImagePull(d time.Duration, size uint64)
}

// Operations reported to Metrics.
const (
	OpRunSandbox      = "run_podsandbox"
	OpStopSandbox     = "stop_podsandbox"
	OpCreateContainer = "create_container"
	OpStartContainer  = "start_container"
	OpStopContainer   = "stop_container"
	OpPullImage       = "pull_image"
)

// Options configure a Syncer. Zero values mean the defaults.
type Options struct {
	// Config are the node facts sandbox and container configs are built
	// with. Config.HostDNS is filled from ResolvConf at each sandbox
	// creation and need not be set.
	Config criconfig.ConfigOptions
	// ResolvConf is the node resolver file for pods using the node's DNS;
	// "" lets the runtime copy its own /etc/resolv.conf.
	ResolvConf string
	// RuntimeHandler selects a runtime class handler; "" is the default.
	RuntimeHandler string
	// Crash-loop back-off: 10 s doubling to 5 min, reset once a container
	// ran for twice the maximum.
	CrashBackoffInitial, CrashBackoffMax time.Duration
	// Image pull back-off, same shape.
	ImageBackoffInitial, ImageBackoffMax time.Duration
	// Clock defaults to the real clock.
	Clock   clock.Clock
	Metrics Metrics
	// RuntimeClasses resolves a pod's runtimeClassName to a CRI runtime
	// handler. nil (standalone): pods naming a RuntimeClass are refused.
	RuntimeClasses RuntimeClasses
	// Objects reads config maps and secrets for env vars and pull secrets
	// (cluster mode); without it such references fail the container.
	Objects ObjectSource
	// NodeCredentials gives the node's own registry credentials for an
	// image (the image credential provider plugins); they are tried after
	// those of the pod's pull secrets. nil: none.
	NodeCredentials NodeCredentials
	// Volumes makes the volumes with content from the API server
	// (projected service-account tokens, ...). nil (standalone): such
	// volumes fail the pod as unsupported.
	Volumes VolumeProvider
	// Hooks runs lifecycle hooks; nil: a lifecycle.Runner on the runtime
	// when it can exec (the CRI client can).
	Hooks HookRunner
	// Probes returns what the probes found of a pod's containers
	// (prober.Manager.View); nil: no probes.
	Probes func(uid types.UID) plan.Probes
	// Devices applies the device plugins' allocation to a container's
	// config at its start; nil: none.
	Devices ContainerDevices
	// PullProgressInterval is how often a pull still going is logged
	// (DefaultPullProgressInterval).
	PullProgressInterval time.Duration
	// Cgroups makes the pods' cgroups (--cgroups-per-qos); nil: none, the
	// runtime's default cgroup.
	Cgroups PodCgroups
	// BindSubpath binds a container's subPath mounts before it is created.
	// nil binds them safely on this node (package volumes/subpath); tests
	// without mount privileges pass their own.
	BindSubpath func(criconfig.SubpathMount) error
}

// Syncer executes pod plans against a container runtime.
type Syncer struct {
	rt       Runtime
	recorder record.EventRecorder
	opts     Options
	clock    clock.Clock
	crash    crashBackoff
	pulls    *pullBackoff
	metrics  Metrics
	hooks    HookRunner
	// resources is the pod-resource pipeline (resourceHooks), in order.
	resources []ResourceHook
	// onPullProgress, when set (tests), is called at each progress report
	// of a pull still going.
	onPullProgress func(image string, elapsed time.Duration)
}

// New returns a Syncer. recorder may be nil (no events).
func New(rt Runtime, recorder record.EventRecorder, opts Options) *Syncer {
	if opts.CrashBackoffInitial <= 0 {
		opts.CrashBackoffInitial = 10 * time.Second
	}
	if opts.CrashBackoffMax <= 0 {
		opts.CrashBackoffMax = 5 * time.Minute
	}
	if opts.ImageBackoffInitial <= 0 {
		opts.ImageBackoffInitial = 10 * time.Second
	}
	if opts.ImageBackoffMax <= 0 {
		opts.ImageBackoffMax = 5 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PullProgressInterval <= 0 {
		opts.PullProgressInterval = DefaultPullProgressInterval
	}
	if opts.Config.MaskedPaths == nil {
		opts.Config.MaskedPaths = criconfig.MaskedPaths(thermalThrottlePaths()...)
	}
	if opts.BindSubpath == nil {
		opts.BindSubpath = bindSubpath
	}
	return &Syncer{
		rt:        rt,
		recorder:  recorder,
		opts:      opts,
		clock:     opts.Clock,
		crash:     crashBackoff{b: flowcontrol.NewFakeBackOff(opts.CrashBackoffInitial, opts.CrashBackoffMax, opts.Clock)},
		pulls:     newPullBackoff(flowcontrol.NewFakeBackOff(opts.ImageBackoffInitial, opts.ImageBackoffMax, opts.Clock)),
		metrics:   opts.Metrics,
		hooks:     hookRunner(rt, opts.Hooks),
		resources: resourceHooks(opts),
	}
}

func hookRunner(rt Runtime, h HookRunner) HookRunner {
	if h != nil {
		return h
	}
	if e, ok := rt.(lifecycle.Execer); ok {
		return lifecycle.New(e)
	}
	return nil
}

// SyncPod makes one pass at bringing pod to its spec, given what runs
// (status, as from ReadPodStatus; nil: nothing). Failures of single
// containers do not stop the others; they show in the result's Waiting
// reasons and the first is the result's Err.
func (s *Syncer) SyncPod(ctx context.Context, pod *v1.Pod, status *runtime.PodStatus) runtime.SyncResult {
	p := &podSync{s: s, pod: pod, status: status, res: runtime.SyncResult{Waiting: map[string]runtime.ContainerWaiting{}}}
	p.run(ctx, s.plan(pod, status))
	return p.res
}

func (s *Syncer) plan(pod *v1.Pod, status *runtime.PodStatus) plan.Actions {
	var probes plan.Probes
	if s.opts.Probes != nil {
		probes = s.opts.Probes(pod.UID)
	}
	return plan.ComputeWithProbes(pod, status, s.crash, probes, s.clock.Now())
}

// InSync reports whether SyncPod would change nothing given status: the
// pod runs as its spec wants (plan.Actions.Idle), or its only action would
// stop again a pod that stopped is the newest sandbox of (plan.Settled;
// stopped is the sandbox an earlier SyncResult.Stopped or KillPod stopped,
// "" when none). Pure apart from the back-off state and the clock; it makes
// no runtime call.
func (s *Syncer) InSync(pod *v1.Pod, status *runtime.PodStatus, stopped string) bool {
	return plan.Settled(s.plan(pod, status), status, stopped)
}

// podSync is one SyncPod pass.
type podSync struct {
	s      *Syncer
	pod    *v1.Pod
	status *runtime.PodStatus
	res    runtime.SyncResult
}

func (p *podSync) run(ctx context.Context, a plan.Actions) {
	s, pod := p.s, p.pod
	if a.KillPod {
		if a.CreateSandbox && p.status.LatestSandbox() != nil {
			s.event(pod, v1.EventTypeNormal, ReasonSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		klog.V(2).InfoS("Killing pod", "pod", klog.KObj(pod), "reason", a.KillPodReason)
		if err := s.killPod(ctx, pod, p.status, nil); err != nil {
			p.fail(fmt.Errorf("kill pod (%s): %w", a.KillPodReason, err))
			return
		}
		if sb := p.status.LatestSandbox(); sb != nil {
			p.res.Stopped = sb.ID
		}
		if a.StopOnly() {
			// The pod finished and stays stopped: release what goes with
			// a stopped pod now (KillPod's release), as a later kill finds
			// it stopped already and does nothing.
			s.releaseResources(ctx, pod.UID)
		}
	}
	killFailed := p.killContainers(ctx, a.ContainersToKill)
	p.backoffs(a.ContainersInBackoff)

	switch {
	case len(a.ContainersToStart) > 0 || len(a.EphemeralToStart) > 0:
		p.start(ctx, a, killFailed)
	case !a.KillPod:
		p.keepResources(ctx)
	}
	s.prune(ctx, a.ContainersToRemove, a.SandboxesToRemove)
}

// start creates the sandbox if needed and starts the planned containers in
// order. Images are resolved (and pulled) while the sandbox is created.
func (p *podSync) start(ctx context.Context, a plan.Actions, killFailed map[string]bool) {
	s, pod := p.s, p.pod
	starts := a.Starts()
	err := s.checkSpec(pod)
	if err == nil {
		err = checkPullSecrets(pod)
	}
	if err != nil {
		for _, st := range starts {
			p.wait(st.Name, ReasonCreateContainerConfigError, err.Error())
		}
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %v", err)
		p.fail(fmt.Errorf("%w: %w", ErrCreateContainerConfig, err))
		return
	}
	attempt := a.SandboxAttempt
	if !a.CreateSandbox {
		attempt = p.status.LatestSandbox().Attempt
	}
	cfgOpts := s.opts.Config
	var sbConfig *runtimeapi.PodSandboxConfig
	if a.CreateSandbox && s.opts.ResolvConf != "" {
		dns, err := readResolvConf(s.opts.ResolvConf)
		if err != nil {
			p.fail(err)
			return
		}
		cfgOpts.HostDNS = dns
	}
	sbRes, err := s.prepareSandbox(ctx, pod)
	if err == nil {
		sbConfig, err = criconfig.SandboxConfig(pod, attempt, sbRes, cfgOpts)
	}
	if err != nil {
		if a.CreateSandbox {
			// Upstream's wording: the pod stays pending with this event.
			s.event(pod, v1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
		}
		p.fail(fmt.Errorf("%w: sandbox config: %w", ErrCreatePodSandbox, err))
		return
	}

	images := s.resolveImages(ctx, pod, starts, sbConfig)

	res, err := s.prepareResources(ctx, pod)
	if err != nil {
		for _, st := range starts {
			p.wait(st.Name, ReasonContainerCreating, err.Error())
		}
		s.event(pod, v1.EventTypeWarning, ReasonFailedMount, "%v", err)
		p.fail(err)
		return
	}
	sandboxID := a.SandboxID
	if a.CreateSandbox {
		if sandboxID, err = s.runSandbox(ctx, pod, sbConfig); err != nil {
			p.fail(err)
			return
		}
	}
	hostsFile, podIPs, err := p.writeEtcHosts(ctx, a.CreateSandbox, sandboxID)
	if err != nil {
		for _, st := range starts {
			p.wait(st.Name, ReasonCreateContainerConfigError, err.Error())
		}
		s.event(pod, v1.EventTypeWarning, ReasonFailed, "Error: %v", err)
		p.fail(err)
		return
	}
	needIPs := !pod.Spec.HostNetwork && podIPs == nil
	for _, st := range starts {
		if killFailed[st.Name] {
			continue
		}
		img := images[st.Spec.Image]()
		if img.waiting != nil {
			p.wait(st.Name, img.waiting.Reason, img.waiting.Message)
			p.retryAfter(img.retryAfter)
			p.fail(img.err)
			continue
		}
		if img.err != nil { // the sync is ending: nothing to start with
			p.fail(img.err)
			continue
		}
		if needIPs && (criconfig.NeedsPodIP(st.Spec) || hookNeedsPodIP(st.Spec)) {
			podIPs, err = p.podIPs(ctx, a.CreateSandbox, sandboxID)
			if err != nil {
				p.fail(err)
				return
			}
			needIPs = false
		}
		if w, err := s.startContainer(ctx, pod, st, sandboxID, sbConfig, img, res, podIPs, hostsFile); err != nil {
			p.wait(st.Name, w.Reason, w.Message)
			p.fail(err)
		}
	}
}

// killContainers stops the planned containers in parallel and returns the
// names of those that could not be stopped: their replacements must not
// start next to them.
func (p *podSync) killContainers(ctx context.Context, kills map[string]plan.Kill) map[string]bool {
	if len(kills) == 0 {
		return nil
	}
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(kills))
	for id, k := range kills {
		cs := p.findContainer(id)
		go func() {
			results <- result{k.Name, p.s.killContainer(ctx, p.pod, cs, k)}
		}()
	}
	failed := map[string]bool{}
	for range kills {
		if r := <-results; r.err != nil {
			failed[r.name] = true
			p.fail(r.err)
		}
	}
	return failed
}

func (p *podSync) findContainer(id string) *runtime.ContainerStatus {
	for _, c := range p.status.Containers {
		if c.ID == id {
			return c
		}
	}
	return &runtime.ContainerStatus{ID: id}
}

// backoffs reports the containers waiting out a crash-loop back-off and
// asks for a re-sync when the first one expires.
func (p *podSync) backoffs(in map[string]time.Duration) {
	for name, remaining := range in {
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s",
			p.s.crash.period(p.pod.UID, name), name, podDesc(p.pod))
		p.wait(name, ReasonCrashLoopBackOff, msg)
		p.retryAfter(remaining)
		p.s.event(p.pod, v1.EventTypeWarning, ReasonBackOff, "Back-off restarting failed container %s in pod %s", name, podDesc(p.pod))
	}
}

// podIPs returns the sandbox IPs: from the status for an existing sandbox,
// from one PodSandboxStatus call for a new one.
func (p *podSync) podIPs(ctx context.Context, created bool, sandboxID string) ([]string, error) {
	if !created {
		if sb := p.status.LatestSandbox(); sb != nil {
			return sb.IPs, nil
		}
	}
	st, err := p.s.rt.PodSandboxStatus(ctx, sandboxID, false)
	if err != nil {
		return nil, fmt.Errorf("pod IP: %w", err)
	}
	var ips []string
	if ip := st.GetNetwork().GetIp(); ip != "" {
		ips = append(ips, ip)
	}
	for _, extra := range st.GetNetwork().GetAdditionalIps() {
		ips = append(ips, extra.GetIp())
	}
	return ips, nil
}

func (p *podSync) wait(name, reason, message string) {
	p.res.Waiting[name] = runtime.ContainerWaiting{Reason: reason, Message: message}
}

func (p *podSync) fail(err error) {
	if err != nil && p.res.Err == nil {
		p.res.Err = err
	}
}

func (p *podSync) retryAfter(d time.Duration) {
	if d > 0 && (p.res.RetryAfter == 0 || d < p.res.RetryAfter) {
		p.res.RetryAfter = d
	}
}

func (s *Syncer) runSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", fmt.Errorf("create pod log directory: %w", err)
	}
	handler, err := s.runtimeHandler(ctx, pod)
	if err != nil {
		s.event(pod, v1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
		return "", fmt.Errorf("%w: %w", ErrCreatePodSandbox, err)
	}
	start := s.clock.Now()
	id, err := s.rt.RunPodSandbox(ctx, cfg, handler)
	s.observe(OpRunSandbox, start, err)
	if err != nil {
		s.event(pod, v1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
		return "", fmt.Errorf("%w: %w", ErrCreatePodSandbox, err)
	}
	return id, nil
}

func (s *Syncer) observe(op string, start time.Time, err error) {
	if s.metrics != nil {
		s.metrics.ObserveOperation(op, s.clock.Since(start), err)
	}
}

// PodEvent records an event on pod (as the Syncer's own events are), for
// decisions taken outside it: the pod failed its active deadline.
func (s *Syncer) PodEvent(pod *v1.Pod, eventType, reason, message string) {
	s.event(pod, eventType, reason, "%s", message)
}

func (s *Syncer) event(pod *v1.Pod, eventType, reason, format string, args ...any) {
	if s.recorder == nil || pod == nil {
		return
	}
	s.recorder.Eventf(pod, eventType, reason, format, args...)
}

func readResolvConf(path string) (*runtimeapi.DNSConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("node resolver config: %w", err)
	}
	defer f.Close()
	cfg, err := criconfig.ParseResolvConf(f)
	if err != nil {
		return nil, fmt.Errorf("node resolver config %s: %w", path, err)
	}
	return cfg, nil
}

// thermalThrottlePaths lists the node's per-CPU thermal throttle counters,
// which containers must not see.
func thermalThrottlePaths() []string {
	matches, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	var paths []string
	for _, m := range matches {
		if _, err := os.Stat(m); err == nil {
			paths = append(paths, m)
		}
	}
	return paths
}

// podDesc formats a pod for messages the way upstream does: name_ns(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// ignoreNotFound drops "already gone" errors of stop/remove calls.
func ignoreNotFound(err error) error {
	if errors.Is(err, cri.ErrNotFound) {
		return nil
	}
	return err
}

// ContainerDevices applies the devices a container holds (device plugins)
// to its CRI config; a container holding none is left as it is.
type ContainerDevices interface {
	Apply(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error
}
