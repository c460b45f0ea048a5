package server

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/pkg/logs"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// APIDeps are what the authenticated node API reads from and acts through.
// A nil function makes the endpoints that need it answer 501. Functions
// must be safe for concurrent use.
type APIDeps struct {
	// Pods returns the pods bound to this node with their statuses (/pods).
	Pods func() []*v1.Pod
	// PodsVersion, optional, changes whenever Pods' answer may have changed
	// (clients poll it, often every few ms): /pods reuses its encoded answer until then.
	PodsVersion func() uint64
	// HealthChecks back /healthz.
	HealthChecks []HealthCheck
	// Metrics serves /metrics (Prometheus text format).
	Metrics http.Handler
	// ResourceMetrics serves /metrics/resource, the CPU and memory usage
	// metrics-server scrapes.
	ResourceMetrics http.Handler
	// ProbeMetrics serves /metrics/probes (prober_probe_total, ...).
	ProbeMetrics http.Handler
	// CadvisorMetrics serves /metrics/cadvisor, cAdvisor's container and
	// machine series.
	CadvisorMetrics http.Handler

	// FindPod returns the desired pod (regular or static, never a mirror)
	// by namespace and name.
	FindPod func(namespace, name string) (*v1.Pod, bool)
	// ResolveUID maps a mirror pod's UID to its static pod's UID and leaves
	// any other UID alone; nil means UIDs are taken as they are.
	ResolveUID func(uid types.UID) types.UID
	// RuntimeStatus returns what runs for a pod: its containers newest
	// first, with log paths (podsync.ReadPodStatus).
	RuntimeStatus func(ctx context.Context, uid types.UID, name, namespace string) (*runtime.PodStatus, error)

	// Summary builds /stats/summary; onlyCPUAndMemory leaves out
	// filesystem and network figures.
	Summary func(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
	// ContainerStats returns the stats of one container by runtime ID.
	ContainerStats func(ctx context.Context, containerID string) (*statsapi.ContainerStats, error)

	// ReadLogs copies a container's CRI log file at path to stdout and
	// stderr (logs.ReadLogs with a way to tell whether the container still
	// runs).
	ReadLogs func(ctx context.Context, path, containerID string, opts logs.Options, stdout, stderr io.Writer) error

	// Exec, Attach and PortForward ask the runtime for a streaming URL
	// (cri.Client methods); the node API proxies the caller's upgraded
	// connection to it.
	Exec        func(ctx context.Context, req *runtimeapi.ExecRequest) (string, error)
	Attach      func(ctx context.Context, req *runtimeapi.AttachRequest) (string, error)
	PortForward func(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error)
	// StreamIdleTimeout closes exec, attach and port-forward sessions
	// idle that long (--streaming-connection-idle-timeout); 0 never does.
	StreamIdleTimeout time.Duration
	// ExecSync runs a command to completion (/run).
	ExecSync func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)

	// Configz returns the configuration in effect (/configz).
	Configz func() *kubeletconfigv1beta1.KubeletConfiguration
	// Profiling serves Go's profiles under /debug/pprof
	// (enableProfilingHandler).
	Profiling bool
	// RunningPods returns the pods the runtime runs, with their identity
	// and running containers only (/runningpods/).
	RunningPods func(ctx context.Context) ([]*v1.Pod, error)
	// Checkpoint writes a checkpoint archive of a running container to
	// location (/checkpoint); ErrUnsupported when the runtime cannot.
	// CheckpointDir is where the archives go (<root dir>/checkpoints).
	Checkpoint    func(ctx context.Context, containerID, location string, timeout time.Duration) error
	CheckpointDir string
	// NodeLogs serves /logs/ (enableSystemLogHandler); nil: not served.
	NodeLogs *NodeLogs
	// SetVerbosity backs PUT /debug/flags/v (enableDebugFlagsHandler);
	// nil: not served.
	SetVerbosity func(level int) error
}

// WithoutDebuggingHandlers is d for --enable-debugging-handlers=false:
// container logs, exec, attach, port-forward, run, running pods and
// checkpoint answer 501, as upstream leaves them out.
func (d APIDeps) WithoutDebuggingHandlers() APIDeps {
	d.ReadLogs, d.Exec, d.Attach, d.PortForward, d.ExecSync = nil, nil, nil, nil, nil
	d.RunningPods, d.Checkpoint = nil, nil
	return d
}

// NewAPIServer returns the authenticated node API server (--port): HTTPS
// with tlsConfig, every request authenticated and authorized by auth.
func NewAPIServer(addr string, tlsConfig *tls.Config, auth Auth, deps APIDeps) *Server {
	return NewTLSServer("node API", addr, APIHandler(auth, deps), tlsConfig)
}

// APIHandler is the node API's handler: the routes of APIRoutes behind
// WithAuth, counted by path.
func APIHandler(auth Auth, deps APIDeps) http.Handler {
	return countKubeletHTTP(instrument(WithAuth(APIRoutes(deps), auth)), serverReadWrite)
}

// APIRoutes are the node API's endpoints, without authentication. Paths
// and parameters are the upstream kubelet's, because the API server and
// kubectl build them.
func APIRoutes(d APIDeps) http.Handler {
	mux := http.NewServeMux()
	installDefault(mux, d)
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", containerLogsHandler(d))

	// Streaming endpoints take GET and POST, as upstream: the API server
	// sends POST, websocket clients can only send GET.
	for _, m := range []string{"GET ", "POST "} {
		mux.Handle(m+"/exec/{namespace}/{pod}/{container}", execHandler(d))
		mux.Handle(m+"/exec/{namespace}/{pod}/{uid}/{container}", execHandler(d))
		mux.Handle(m+"/attach/{namespace}/{pod}/{container}", attachHandler(d))
		mux.Handle(m+"/attach/{namespace}/{pod}/{uid}/{container}", attachHandler(d))
		mux.Handle(m+"/portForward/{namespace}/{pod}", portForwardHandler(d))
		mux.Handle(m+"/portForward/{namespace}/{pod}/{uid}", portForwardHandler(d))
	}
	mux.Handle("POST /run/{namespace}/{pod}/{container}", runHandler(d))
	mux.Handle("POST /run/{namespace}/{pod}/{uid}/{container}", runHandler(d))
	installDebug(mux, d)
	return mux
}

// installDefault installs what upstream calls its default handlers, served
// by the node API and the read-only port alike: health, pods, stats and
// metrics.
func installDefault(mux *http.ServeMux, d APIDeps) {
	InstallHealthz(mux, d.HealthChecks...)
	mux.Handle("GET /pods", CachedPodsHandler(d.Pods, d.PodsVersion))
	mux.Handle("GET /metrics", orNotImplemented(d.Metrics, "metrics"))
	mux.Handle("GET /metrics/resource", orNotImplemented(d.ResourceMetrics, "resource metrics"))
	mux.Handle("GET /metrics/probes", orNotImplemented(d.ProbeMetrics, "probe metrics"))
	mux.Handle("GET /metrics/cadvisor", orNotImplemented(d.CadvisorMetrics, "cAdvisor metrics"))

	mux.Handle("GET /stats/summary", summaryHandler(d))
	mux.Handle("POST /stats/summary", summaryHandler(d))
	mux.Handle("GET /stats/{pod}/{container}", containerStatsHandler(d))
	mux.Handle("GET /stats/{namespace}/{pod}/{uid}/{container}", containerStatsHandler(d))
}

func orNotImplemented(h http.Handler, what string) http.Handler {
	if h != nil {
		return h
	}
	return handlerFunc(func(http.ResponseWriter, *http.Request) error {
		return notImplemented(what)
	})
}
