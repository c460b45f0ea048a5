package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/gc"
	"github.com/nodelet/nodelet/pkg/images"
	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/metrics"
	"github.com/nodelet/nodelet/pkg/mirror"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/prober"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
	"github.com/nodelet/nodelet/pkg/runtime/podsync"
	"github.com/nodelet/nodelet/pkg/server"
	"github.com/nodelet/nodelet/pkg/status"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "v0.1.0-dev"

// run wires nodelet together and blocks until ctx is done.
// eventSourceComponent is the source of the events nodelet records:
// upstream's "kubelet", so that what filters on it (kubectl get events
// --field-selector source=kubelet, dashboards, the e2e suite) finds them.
const eventSourceComponent = "kubelet"

func run(ctx context.Context, opts *options.Options) error {
	nodeName := opts.Hostname
	hostIP, err := nodeIP(opts)
	if err != nil {
		return err
	}
	klog.InfoS("Starting nodelet", "version", version, "node", nodeName, "hostIP", hostIP,
		"runtime", opts.ContainerRuntimeEndpoint, "rootDir", opts.RootDir)
	if err := os.MkdirAll(opts.RootDir, 0o750); err != nil {
		return fmt.Errorf("create root dir: %w", err)
	}

	client, err := dialRuntime(ctx, opts.ContainerRuntimeEndpoint)
	if err != nil {
		return err
	}
	defer client.Close()

	var cl *clusterEnv
	if opts.KubeconfigPath != "" {
		if cl, err = newClusterEnv(opts, nodeName, hostIP); err != nil {
			return err
		}
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	if cl != nil {
		cl.startEventSink(broadcaster)
	}
	defer broadcaster.Shutdown()
	// Events of a static pod are filed under its mirror pod, where kubectl
	// describe looks for them.
	pods := pod.NewManager()
	recorder := mirror.NewEventRecorder(broadcaster.NewRecorder(kube.Scheme, v1.EventSource{Component: eventSourceComponent, Host: nodeName}), pods)
	nodeRef := &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}

	registry := prometheus.NewRegistry()
	if err := registerMetrics(registry, client); err != nil {
		return err
	}
	// The probes wake the agent's pod workers; the agent exists before any
	// probe runs (probes start from its workers).
	var ag *agent.Agent
	probeCtx, stopProbes := context.WithCancel(ctx)
	probes := prober.New(probeCtx, prober.Options{
		Exec: client, Recorder: recorder,
		OnChange: func(uid types.UID) { ag.ProbeChanged(uid) },
	})
	defer func() { stopProbes(); probes.Wait() }()
	features := securityFeatures(ctx, client)
	// What a resourceFieldRef to an unset limit reads, in env vars and
	// downward API volumes alike.
	allocatable := nodeAllocatable(opts.RootDir)
	volumeProvider := cl.volumeProvider(ctx, allocatable)
	syncer := podsync.New(client, recorder, podsync.Options{
		Config: cl.withEnvSources(ctx, allocatable, criconfig.ConfigOptions{
			PodLogsDir: opts.PodLogsDir, RootDir: opts.RootDir, NodeName: nodeName,
			NodeIPs: []string{hostIP}, ClusterDNS: opts.ClusterDNS, ClusterDomain: opts.ClusterDomain,
			SeccompDefault: opts.SeccompDefault, UserNamespaces: features.userNamespaces,
		}),
		RuntimeClasses: cl.runtimeClassLookup(),
		ResolvConf:     opts.ResolvConf,
		Metrics:        metrics.RuntimeOperations{},
		Volumes:        volumeProvider,
		Objects:        cl.objectSource(),
		Probes:         func(uid types.UID) plan.Probes { return probes.View(uid) },
	})

	merger := config.NewMerger(config.Incremental)
	reporter := config.WithReporter(manifestReporter{recorder: recorder, node: nodeRef})
	var sourceRunners []func(context.Context)
	if opts.StaticPodPath != "" {
		src := config.NewFileSource(opts.StaticPodPath, nodeName, opts.FileCheckFrequency, merger.Channel(pod.FileSource), reporter)
		sourceRunners = append(sourceRunners, src.Run)
	}
	if opts.StaticPodURL != "" {
		src := config.NewURLSource(opts.StaticPodURL, http.Header(opts.StaticPodURLHeader), nodeName, opts.HTTPCheckFrequency, merger.Channel(pod.HTTPSource), reporter)
		sourceRunners = append(sourceRunners, src.Run)
	}
	statuses := status.NewCache()
	if cl != nil {
		cl.pods, cl.statuses, cl.cri, cl.recorder, cl.registry = pods, statuses, client, recorder, registry
		src, err := cl.apiSource(merger.Channel(pod.ApiserverSource))
		if err != nil {
			return err
		}
		sourceRunners = append(sourceRunners, src)
	}
	if len(sourceRunners) == 0 {
		klog.InfoS("No pod source configured (--pod-manifest-path, --manifest-url, --kubeconfig): nodelet will only clean up")
	}

	relister := pleg.New(client, opts.RelistPeriod)
	ag = agent.New(agent.Config{
		NodeName: nodeName, HostIP: hostIP, RuntimeName: runtimeName(ctx, client),
		ResyncPeriod: opts.SyncFrequency, ContainerGCPeriod: time.Minute, RootDir: opts.RootDir,
	}, podRuntime{client, syncer}, relister, merger.Updates(), merger.Sources(), pods, statuses)
	ag.SetProber(probes)

	admit, err := admission(opts, features)
	if err != nil {
		return err
	}
	ag.SetAdmission(admit, recorder)
	if cl != nil {
		cl.resync = ag.Resync
	}

	containerGC, err := gc.New(gc.Config{
		Runtime: gc.NewCRIRuntime(client.RuntimeService()), Policy: gc.DefaultPolicy(),
		PodLogsDir: opts.PodLogsDir, Registerer: registry,
	})
	if err != nil {
		return err
	}
	ag.SetHousekeeper(containerGCFunc(func(ctx context.Context, wanted func(types.UID) bool) error {
		_, err := containerGC.GarbageCollect(ctx, wanted)
		return err
	}))

	imageGC, err := images.NewManager(images.Config{
		Runtime: images.NewCRIRuntime(client.RuntimeService(), client.ImageService()),
		Policy: images.Policy{
			HighThresholdPercent: opts.ImageGCHighThresholdPercent,
			LowThresholdPercent:  opts.ImageGCLowThresholdPercent,
			MinAge:               opts.ImageMinimumGCAge,
		},
		SandboxImage: opts.PodInfraContainerImage,
		ImagesInUse:  func() []string { return specImages(pods.Pods()) },
		Recorder:     recorder, NodeRef: nodeRef, Registerer: registry,
	})
	if err != nil {
		return err
	}

	var clusterRunners []func(context.Context)
	if cl != nil {
		cl.diskPressure = imageGC.DiskPressure
		cl.runtimeHealthy = relister.Healthy
		member, err := cl.podCluster()
		if err != nil {
			return err
		}
		ag.SetCluster(member)
		runners, err := cl.runners()
		if err != nil {
			return err
		}
		clusterRunners = runners
	}

	healthChecks := []server.HealthCheck{{Name: "pleg", Check: relister.Healthy}}
	readyChecks := []server.HealthCheck{{Name: "sources", Check: func() error {
		if missing := ag.SourcesReady(); len(missing) > 0 {
			return fmt.Errorf("config sources not seen yet: %v", missing)
		}
		return nil
	}}}
	var servers []*server.Server
	if addr := opts.HealthzAddr(); addr != "" {
		mux := http.NewServeMux()
		server.InstallHealthz(mux, healthChecks...)
		server.InstallReadyz(mux, readyChecks...)
		servers = append(servers, server.NewServer("healthz", addr, mux))
	}
	if addr := opts.ReadOnlyAddr(); addr != "" {
		servers = append(servers, server.NewReadOnlyServer(addr, server.ReadOnlyDeps{Pods: ag.Pods, PodsVersion: ag.PodsVersion, HealthChecks: healthChecks}))
	}
	var apiClient kube.Interface
	if cl != nil {
		if apiClient, err = cl.reviewClient(); err != nil {
			return err
		}
	}
	apiServer, rotateLogs, err := nodeAPI(opts, apiServerDeps{
		nodeName: nodeName, hostIP: hostIP, runtime: client, pods: pods, podList: ag.Pods, podsVersion: ag.PodsVersion,
		health: healthChecks, gatherer: registry, client: apiClient,
	})
	if err != nil {
		return err
	}
	if apiServer != nil {
		servers = append(servers, apiServer)
	}
	// Bind every port before anything runs, so a port in use fails start-up
	// with a clear error instead of half a node agent.
	for _, s := range servers {
		if err := s.Listen(); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(servers))
	var wg wait.Group
	for _, s := range servers {
		s := s
		wg.Start(func() {
			if err := s.Run(ctx); err != nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.StartWithContext(ctx, merger.Run)
	for _, r := range sourceRunners {
		wg.StartWithContext(ctx, r)
	}
	wg.StartWithContext(ctx, imageGC.Run)
	wg.StartWithContext(ctx, rotateLogs)
	for _, r := range clusterRunners {
		wg.StartWithContext(ctx, r)
	}

	agentErr := ag.Run(ctx)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return agentErr
}

// dialRuntime waits for the runtime to answer: at boot it may start after
// nodelet. It gives up after a minute with the last error, so a wrong
// endpoint is reported rather than waited on forever.
func dialRuntime(ctx context.Context, endpoint string) (*cri.Client, error) {
	var client *cri.Client
	var lastErr error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: 1 << 30}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := wait.ExponentialBackoffWithContext(dctx, backoff, func(ctx context.Context) (bool, error) {
		client, lastErr = cri.Dial(ctx, endpoint)
		if lastErr != nil {
			klog.InfoS("Waiting for the container runtime", "endpoint", endpoint, "err", lastErr)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			return nil, fmt.Errorf("container runtime at %s: %w", endpoint, lastErr)
		}
		return nil, fmt.Errorf("container runtime at %s: %w", endpoint, err)
	}
	return client, nil
}

// runtimeName is the prefix of container IDs in statuses ("containerd").
func runtimeName(ctx context.Context, c *cri.Client) string {
	v, err := c.Version(ctx)
	if err != nil || v.RuntimeName == "" {
		return "containerd"
	}
	return v.RuntimeName
}

// podRuntime joins the CRI client (what runs) and the syncer (what to do
// about it) into the agent's view of the runtime.
type podRuntime struct {
	*cri.Client
	*podsync.Syncer
}

var _ agent.PodRuntime = podRuntime{}

func (r podRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*runtime.PodStatus, error) {
	return r.Client.PodStatus(ctx, uid, name, namespace)
}

type containerGCFunc func(ctx context.Context, wanted func(types.UID) bool) error

func (f containerGCFunc) GarbageCollect(ctx context.Context, wanted func(types.UID) bool) error {
	return f(ctx, wanted)
}

// specImages lists the images the wanted pods name, so image GC keeps an
// image a pod is about to start with.
func specImages(pods []*v1.Pod) []string {
	set := sets.New[string]()
	for _, p := range pods {
		for _, c := range p.Spec.InitContainers {
			set.Insert(c.Image)
		}
		for _, c := range p.Spec.Containers {
			set.Insert(c.Image)
		}
	}
	return sets.List(set)
}

// manifestReporter logs a broken manifest and records it as a warning event
// on the node.
type manifestReporter struct {
	recorder record.EventRecorder
	node     *v1.ObjectReference
}

func (r manifestReporter) ManifestError(source, location string, err error) {
	klog.ErrorS(err, "Rejected pod manifest", "source", source, "location", location)
	r.recorder.Eventf(r.node, v1.EventTypeWarning, "FailedManifest", "%s manifest %s: %v", source, location, err)
}
