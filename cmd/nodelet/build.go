package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/certs"
	"github.com/nodelet/nodelet/pkg/config"
	"github.com/nodelet/nodelet/pkg/credentialprovider"
	"github.com/nodelet/nodelet/pkg/deviceplugin"
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
	"github.com/nodelet/nodelet/pkg/runtime/cristatus"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
	"github.com/nodelet/nodelet/pkg/runtime/podsync"
	"github.com/nodelet/nodelet/pkg/server"
	"github.com/nodelet/nodelet/pkg/status"
	"github.com/nodelet/nodelet/pkg/tracing"
	"github.com/nodelet/nodelet/pkg/version"
	"github.com/nodelet/nodelet/pkg/volumes"
)

// daemon is nodelet built and not yet running.
type daemon struct {
	// servers are bound before anything runs; they are also components.
	servers    []*server.Server
	components []component
	// events is started just before the components, so that nothing they
	// record is lost, and shut down after they stopped.
	events record.EventBroadcaster
	// cluster is nil standalone.
	cluster *cluster
}

// startEvents sends recorded events to the log and, in a cluster, to the
// API server; the returned func stops that once the components stopped.
// The broadcaster queues and retries, so an API outage never blocks a pod
// worker that records an event.
func (d *daemon) startEvents() (stop func()) {
	d.events.StartStructuredLogging(3)
	if d.cluster != nil {
		d.events.StartRecordingToSink(kube.EventSink{Client: d.cluster.client})
	}
	return d.events.Shutdown
}

// build constructs every part of nodelet from its dependencies, in the
// order they need each other; nothing runs yet. client is the runtime's,
// already answering.
func build(ctx context.Context, opts *options.Options, client *cri.Client, tp trace.TracerProvider) (*daemon, error) {
	nodeName := opts.Hostname
	hostIP, err := nodeIP(opts)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Starting nodelet", "version", version.String(), "node", nodeName, "hostIP", hostIP,
		"runtime", opts.ContainerRuntimeEndpoint, "rootDir", opts.RootDir)
	d := &daemon{events: record.NewBroadcaster()}
	add := func(c ...component) { d.components = append(d.components, c...) }
	if opts.KubeconfigPath != "" {
		if d.cluster, err = newCluster(opts, nodeName, hostIP); err != nil {
			return nil, err
		}
		if d.cluster.creds != nil {
			add(component{"client certificate", d.cluster.creds.Run})
		}
	}
	cl := d.cluster

	// Events of a static pod are filed under its mirror pod, where kubectl
	// describe looks for them.
	pods := pod.NewManager()
	statuses := status.NewCache()
	recorder := mirror.NewEventRecorder(d.events.NewRecorder(kube.Scheme, v1.EventSource{Component: eventSourceComponent, Host: nodeName}), pods)
	nodeRef := &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
	registry := prometheus.NewRegistry()
	lister := newRuntimeLister(client)
	if err := registerMetrics(registry, lister, nodeName); err != nil {
		return nil, err
	}
	// Other goroutines (probes, the volume refresher) reach the sync loop
	// only through wakeups.
	wakeups := agent.NewWakeups()
	adoptions, runningStatic := staticAdoptions(ctx, client)
	var mirrorsAtStart map[string][]v1.ContainerStatus
	if cl != nil && runningStatic > 0 {
		mirrorsAtStart = startupMirrorStatuses(ctx, cl.client.Pods(""), nodeName)
	}
	probes := prober.New(prober.Options{Exec: client, Recorder: recorder, OnChange: wakeups.ProbeChanged,
		Reported: func(p *v1.Pod) []v1.ContainerStatus { return reportedStatuses(pods, mirrorsAtStart, p) }})
	add(component{"prober", probes.Run})

	features := securityFeatures(ctx, client)
	// What a resourceFieldRef to an unset limit reads, in env vars and
	// downward API volumes alike.
	allocatable := nodeAllocatable(opts.RootDir)
	configOpts := criconfig.ConfigOptions{
		PodLogsDir: opts.PodLogsDir, RootDir: opts.RootDir, NodeName: nodeName,
		NodeIPs: nodeIPList(hostIP, opts), ClusterDNS: opts.ClusterDNS, ClusterDomain: opts.ClusterDomain,
		SeccompDefault: opts.SeccompDefault, UserNamespaces: features.userNamespaces,
		NodeAllocatable: allocatable,
	}
	if mem, ok := allocatable[v1.ResourceMemory]; ok {
		configOpts.MemoryCapacity = mem.Value()
	}
	syncOpts := podsync.Options{
		ResolvConf: opts.ResolvConf,
		Metrics:    metrics.RuntimeOperations{},
		Probes:     func(uid types.UID) plan.Probes { return probes.View(uid) },
	}
	if opts.ImageCredentialProviderConfig != "" {
		creds, err := credentialprovider.Load(opts.ImageCredentialProviderConfig, opts.ImageCredentialProviderBinDir)
		if err != nil {
			return nil, err
		}
		klog.InfoS("Image credential provider plugins", "providers", creds.Names())
		syncOpts.NodeCredentials = creds
	}
	var volumeProvider *volumes.Provider
	if cl != nil {
		if volumeProvider, err = cl.volumeProvider(pods, allocatable, wakeups.Resync); err != nil {
			return nil, err
		}
		add(component{"volumes", volumeProvider.Run})
		syncOpts.Volumes = volumeProvider
		syncOpts.Objects = volumeProvider.Objects()
		services := cl.serviceEnv()
		add(component{"service environment", services.Run})
		configOpts.ServiceEnv = services.PodVars
		syncOpts.RuntimeClasses = runtimeClasses{cl.client}
	}
	syncOpts.Config = configOpts
	podCg, err := podCgroups(ctx, opts)
	if err != nil {
		return nil, err
	}
	if podCg != nil {
		syncOpts.Cgroups = podCg
	}
	devices, err := deviceplugin.New(filepath.Join(opts.RootDir, deviceplugin.DirName))
	if err != nil {
		return nil, err
	}
	add(component{"device plugins", devices.Run})
	syncOpts.Devices = devices
	syncer := podsync.New(client, recorder, syncOpts)

	merger := config.NewMerger(config.Incremental)
	add(component{"config merger", merger.Run})
	reporter := config.WithReporter(manifestReporter{recorder: recorder, node: nodeRef})
	adopt := config.WithAdoptions(adoptions)
	sources := 0
	if opts.StaticPodPath != "" {
		src := config.NewFileSource(opts.StaticPodPath, nodeName, opts.FileCheckFrequency, merger.Channel(pod.FileSource), reporter, adopt)
		add(component{"manifest dir", src.Run})
		sources++
	}
	if opts.StaticPodURL != "" {
		src := config.NewURLSource(opts.StaticPodURL, http.Header(opts.StaticPodURLHeader), nodeName, opts.HTTPCheckFrequency, merger.Channel(pod.HTTPSource), reporter, adopt)
		add(component{"manifest URL", src.Run})
		sources++
	}
	var member agent.Cluster
	if cl != nil {
		src := config.NewAPISource(cl.client, nodeName, merger.Channel(pod.ApiserverSource))
		add(component{"API pod source", src.Run})
		sources++
		var parts []component
		member, parts = cl.podMember(pods, volumeProvider)
		add(parts...)
	}
	if sources == 0 {
		klog.InfoS("No pod source configured (--pod-manifest-path, --manifest-url, --kubeconfig): nodelet will only clean up")
	}

	fit := newFitNode(ctx, opts, nodeName, nodeIPList(hostIP, opts))
	fit.devices = devices
	admit, err := podAdmission(opts, features, fit, devices)
	if err != nil {
		return nil, err
	}
	containerGC, err := gc.New(gc.Config{
		Runtime: client, Policy: gc.DefaultPolicy(),
		PodLogsDir: opts.PodLogsDir, Registerer: registry,
	})
	if err != nil {
		return nil, err
	}
	relister := pleg.New(lister, opts.RelistPeriod, metrics.PLEG{})
	tracer := tp.Tracer(tracing.Scope)
	ag, err := agent.New(agent.Config{
		NodeName: nodeName, HostIP: hostIP, HostIPs: nodeIPList(hostIP, opts), RuntimeName: runtimeName(ctx, client),
		ResyncPeriod: opts.SyncFrequency, ContainerGCPeriod: time.Minute, RootDir: opts.RootDir,
	}, agent.Deps{
		Runtime: podRuntime{client, syncer}, Relister: relister,
		Updates: merger.Updates(), Sources: merger.Sources(), Pods: pods, Statuses: statuses,
		Wakeups: wakeups, Prober: probes, Admit: admit, Preempt: podPreemption(fit), Recorder: recorder, Cluster: member,
		Tracer: tracer,
		Housekeeper: containerGCFunc(func(ctx context.Context, wanted func(types.UID) bool) error {
			ctx, span := tracer.Start(ctx, "Containers/GarbageCollect")
			defer span.End()
			_, err := containerGC.GarbageCollect(ctx, wanted)
			if podCg != nil {
				err = errors.Join(err, sweepPodCgroups(ctx, podCg, newRuntimeLister(client), wanted))
			}
			return errors.Join(err, devices.Release(wanted))
		}),
	})
	if err != nil {
		return nil, err
	}
	add(component{"sync loop", ag.Run})

	imageGC, err := images.NewManager(images.Config{
		Runtime: client,
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
		return nil, err
	}
	add(component{"image GC", imageGC.Run})

	var shuttingDown shutdownState
	if cl != nil {
		ctrl, err := cl.nodeController(nodeHost{runtime: client, diskPressure: imageGC.DiskPressure, runtimeHealthy: relister.Healthy,
			shuttingDown: shuttingDown.get, devices: devices}, recorder)
		if err != nil {
			return nil, err
		}
		add(component{"node status", ctrl.Run})
		fit.useAPI(ctrl.Node)
	}
	graceful, err := gracefulShutdown(opts, ag, &shuttingDown)
	if err != nil {
		return nil, err
	}
	if graceful != nil {
		add(*graceful)
	}

	healthChecks := []server.HealthCheck{{Name: "pleg", Check: relister.Healthy}}
	readyChecks := []server.HealthCheck{{Name: "sources", Check: func() error {
		if missing := ag.SourcesReady(); len(missing) > 0 {
			return fmt.Errorf("config sources not seen yet: %v", missing)
		}
		return nil
	}}}
	if addr := opts.HealthzAddr(); addr != "" {
		mux := http.NewServeMux()
		server.InstallHealthz(mux, healthChecks...)
		server.InstallReadyz(mux, readyChecks...)
		d.servers = append(d.servers, server.NewServer("healthz", addr, mux))
	}
	var apiClient kube.Interface
	var serving *certs.Serving
	if cl != nil {
		if apiClient, err = cl.reviewClient(); err != nil {
			return nil, err
		}
		if opts.ServerTLSBootstrap && opts.EnableServer {
			if serving, err = cl.servingCertificate(); err != nil {
				return nil, err
			}
			add(component{"serving certificate", serving.Run})
		}
	}
	apiServer, rotateLogs, endpoints, err := nodeAPI(opts, apiServerDeps{
		nodeName: nodeName, hostIP: hostIP, runtime: client, pods: pods, podList: ag.Pods, podsVersion: ag.PodsVersion,
		health: healthChecks, gatherer: registry, client: apiClient, serving: serving,
	})
	if err != nil {
		return nil, err
	}
	add(component{"log rotation", rotateLogs})
	if addr := opts.ReadOnlyAddr(); addr != "" {
		d.servers = append(d.servers, server.NewReadOnlyServer(addr, endpoints))
	}
	if apiServer != nil {
		d.servers = append(d.servers, apiServer)
	}
	for _, s := range d.servers {
		add(component{"server " + s.Name(), s.Run})
	}
	return d, nil
}

// podRuntime joins the CRI client (what runs) and the syncer (what to do
// about it) into the agent's view of the runtime.
type podRuntime struct {
	*cri.Client
	*podsync.Syncer
}

var _ agent.PodRuntime = podRuntime{}

func (r podRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*runtime.PodStatus, error) {
	return podsync.ReadPodStatus(ctx, r.Client, uid, name, namespace)
}

// runtimeLister lists what runs on the node by pod, for the relister and
// the running pods/containers metrics. Both share one conversion cache: a
// relist of an unchanged node converts nothing, and its pods are the
// previous listing's (read-only) *runtime.Pod values.
type runtimeLister struct {
	*cri.Client
	pods *cristatus.PodsCache
}

func newRuntimeLister(c *cri.Client) runtimeLister {
	return runtimeLister{Client: c, pods: &cristatus.PodsCache{}}
}

var _ pleg.Lister = runtimeLister{}

func (l runtimeLister) ListPods(ctx context.Context) ([]*runtime.Pod, error) {
	s, err := l.ListState(ctx)
	if err != nil {
		return nil, err
	}
	return l.pods.Pods(s), nil
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
