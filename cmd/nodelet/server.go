package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/certs"
	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/logs"
	"github.com/nodelet/nodelet/pkg/metrics"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/server"
	"github.com/nodelet/nodelet/pkg/stats"
)

// apiServerDeps are the parts of nodelet the node API reads from.
type apiServerDeps struct {
	nodeName string
	hostIP   string
	runtime  *cri.Client
	pods     *pod.Manager
	// podList backs /pods: desired pods with their statuses (agent.Pods).
	podList func() []*v1.Pod
	// podsVersion changes when podList's answer may have (agent.PodsVersion).
	podsVersion func() uint64
	health      []server.HealthCheck
	gatherer    prometheus.Gatherer
	// client is the API client; nil when standalone.
	client kube.Interface
	// serving is the serving certificate from the cluster
	// (serverTLSBootstrap); nil: --tls-cert-file or a self-signed one.
	serving *certs.Serving
}

// errNoNodeAPI says why the node API is not served; run logs it and goes on.
var errNoNodeAPI = errors.New("node API not served")

// registerMetrics puts nodelet's metrics, the running pods/containers
// collector over the runtime, kubelet_node_name and the Go and process
// collectors on reg.
func registerMetrics(reg prometheus.Registerer, rt runtimeLister, nodeName string) error {
	if err := metrics.Register(reg,
		metrics.NewRuntimeCollector(rt.ListPods),
		metrics.NodeNameCollector(nodeName),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return nil
}

// newAPIServer builds the authenticated node API (--port) from opts. It
// returns an error wrapping errNoNodeAPI when the settings ask for webhook
// authentication or authorization but there is no API server to ask
// (standalone with a config file, whose defaults turn both on): upstream
// refuses to start then; nodelet runs its pods without the node API.
func newAPIServer(opts *options.Options, d apiServerDeps, deps server.APIDeps) (*server.Server, error) {
	addr := opts.ServerAddr()
	if addr == "" {
		return nil, fmt.Errorf("%w: --enable-server=false", errNoNodeAPI)
	}
	auth, clientCAs, err := nodeAuth(opts, d.nodeName, d.client)
	if err != nil {
		return nil, err
	}
	var cert tls.Certificate
	if d.serving == nil {
		if cert, err = server.ServingCertificate(opts.TLSCertFile, opts.TLSPrivateKeyFile, selfSigned(opts, d)); err != nil {
			return nil, err
		}
	} else if opts.TLSCertFile != "" {
		// As upstream: serverTLSBootstrap takes precedence.
		klog.InfoS("serverTLSBootstrap is on: --tls-cert-file and --tls-private-key-file are not used", "tlsCertFile", opts.TLSCertFile)
	}
	klog.InfoS("Node API configured", "address", addr, "clientCA", opts.ClientCAFile != "",
		"tokenWebhook", opts.WebhookAuthentication, "anonymous", opts.AnonymousAuth, "authorization", opts.AuthorizationMode, "tlsMinVersion", opts.TLSMinVersion)
	tlsConfig := server.TLSConfig(cert, clientCAs)
	if d.serving != nil {
		tlsConfig.Certificates = nil
		tlsConfig.GetCertificate = d.serving.GetCertificate
	}
	// --tls-min-version and --tls-cipher-suites; unset keeps TLSConfig's
	// TLS 1.2 floor and Go's suites.
	if v := opts.TLSVersion(); v != 0 {
		tlsConfig.MinVersion = v
	}
	tlsConfig.CipherSuites = opts.CipherSuiteIDs()
	for _, w := range opts.TLSWarnings() {
		klog.InfoS("Weak TLS setting for the node API", "warning", w)
	}
	return server.NewAPIServer(addr, tlsConfig, auth, deps), nil
}

// nodeAuth builds authentication and authorization from --client-ca-file,
// --authentication-token-webhook, --anonymous-auth and
// --authorization-mode (or their KubeletConfiguration fields). client is the
// API client the webhooks ask; nil when standalone.
func nodeAuth(opts *options.Options, nodeName string, client kube.Interface) (server.Auth, *x509.CertPool, error) {
	webhookAuthz := opts.AuthorizationMode == options.AuthorizationModeWebhook
	if client == nil && (opts.WebhookAuthentication || webhookAuthz) {
		return server.Auth{}, nil, fmt.Errorf("%w: --authentication-token-webhook and --authorization-mode=Webhook need --kubeconfig; "+
			"set authentication.webhook.enabled=false and authorization.mode=AlwaysAllow (with --client-ca-file) to serve it standalone", errNoNodeAPI)
	}
	auth := server.Auth{NodeName: nodeName, Authenticators: server.Authenticators{AllowAnonymous: opts.AnonymousAuth}}
	var clientCAs *x509.CertPool
	if opts.ClientCAFile != "" {
		pool, err := server.ClientCAPool(opts.ClientCAFile)
		if err != nil {
			return server.Auth{}, nil, err
		}
		clientCAs = pool
		auth.Authenticators.List = append(auth.Authenticators.List, server.X509Authenticator(pool))
	}
	if opts.WebhookAuthentication {
		reviews := client.TokenReviews()
		auth.Authenticators.List = append(auth.Authenticators.List, server.TokenAuthenticator(
			func(ctx context.Context, r *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
				return reviews.Create(ctx, r, metav1.CreateOptions{})
			}, server.TokenCacheOptions(opts.WebhookTokenCacheTTL)))
	}
	if len(auth.Authenticators.List) == 0 && !opts.AnonymousAuth {
		klog.InfoS("Node API has no way to authenticate anyone: every request will get 401; set --client-ca-file or --authentication-token-webhook")
	}
	switch opts.AuthorizationMode {
	case options.AuthorizationModeWebhook:
		sars := client.SubjectAccessReviews()
		auth.Authorizer = server.SubjectAccessReviewAuthorizer(
			func(ctx context.Context, r *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
				return sars.Create(ctx, r, metav1.CreateOptions{})
			}, server.CacheOptions{AllowTTL: opts.AuthzCacheAuthorizedTTL, DenyTTL: opts.AuthzCacheUnauthorizedTTL})
	case options.AuthorizationModeAlwaysAllow:
		auth.Authorizer = server.AlwaysAllow
	default:
		return server.Auth{}, nil, fmt.Errorf("node API: authorization mode %q is not supported", opts.AuthorizationMode)
	}
	return auth, clientCAs, nil
}

// apiDeps connects the node API's endpoints to the runtime, the pod
// manager, stats, logs and metrics.
func apiDeps(opts *options.Options, d apiServerDeps) (server.APIDeps, error) {
	statsProvider, err := stats.New(stats.Config{
		NodeName:   d.nodeName,
		Runtime:    d.runtime,
		RootDir:    opts.RootDir,
		PodLogsDir: opts.PodLogsDir,
	})
	if err != nil {
		return server.APIDeps{}, err
	}
	logReader := logs.NewReader(func(ctx context.Context, id string) (bool, error) {
		st, err := d.runtime.ContainerStatus(ctx, id, false)
		if errors.Is(err, cri.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return st.State == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	})
	deps := server.APIDeps{
		Pods:            d.podList,
		PodsVersion:     d.podsVersion,
		HealthChecks:    d.health,
		ResourceMetrics: metrics.ResourceMetricsHandler(statsProvider.Summary),
		ProbeMetrics:    metrics.ProbeMetricsHandler(),
		CadvisorMetrics: metrics.CadvisorHandler(statsProvider.Detailed),
		FindPod: func(namespace, name string) (*v1.Pod, bool) {
			return d.pods.PodByFullName(name, namespace)
		},
		ResolveUID:        d.pods.ResolveUID,
		RuntimeStatus:     podRuntime{Client: d.runtime}.PodStatus,
		Summary:           statsProvider.Summary,
		ContainerStats:    statsProvider.ContainerStats,
		ReadLogs:          logReader.ReadLogs,
		Exec:              d.runtime.Exec,
		Attach:            d.runtime.Attach,
		PortForward:       d.runtime.PortForward,
		ExecSync:          d.runtime.ExecSync,
		StreamIdleTimeout: opts.StreamingConnectionIdleTimeout,
		Configz:           opts.KubeletConfiguration,
		Profiling:         opts.EnableProfilingHandler,
		RunningPods: func(ctx context.Context) ([]*v1.Pod, error) {
			s, err := d.runtime.ListState(ctx)
			if err != nil {
				return nil, err
			}
			return runningPods(s), nil
		},
		Checkpoint:    checkpointer(d.runtime),
		CheckpointDir: filepath.Join(opts.RootDir, "checkpoints"),
		NodeLogs:      nodeLogs(opts),
	}
	if opts.EnableDebugFlagsHandler {
		deps.SetVerbosity = options.SetVerbosity
	}
	if !opts.EnableDebuggingHandlers {
		deps = deps.WithoutDebuggingHandlers()
	}
	if d.gatherer != nil {
		deps.Metrics = promhttp.HandlerFor(d.gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	}
	return deps, nil
}

// selfSigned is where a serving certificate is generated when none is
// configured: --cert-dir, for the node name and its addresses.
func selfSigned(opts *options.Options, d apiServerDeps) server.SelfSigned {
	dir := opts.CertDir
	if dir == "" { // options not from Resolve (tests)
		dir = filepath.Join(opts.RootDir, "pki")
	}
	s := server.SelfSigned{Dir: dir, Host: d.nodeName, DNSNames: []string{"localhost"}}
	s.IPs = append(s.IPs, opts.NodeIPs()...)
	if ip := net.ParseIP(d.hostIP); ip != nil {
		s.IPs = append(s.IPs, ip)
	}
	s.IPs = append(s.IPs, net.IPv4(127, 0, 0, 1))
	return s
}

// newLogRotator returns the container log rotation loop
// (--container-log-max-size, --container-log-max-files).
func newLogRotator(opts *options.Options, rt *cri.Client) (func(context.Context) error, error) {
	r, err := logs.NewRotator(logs.RotatorConfig{
		Runtime:  rt,
		MaxSize:  opts.ContainerLogMaxSizeBytes(),
		MaxFiles: opts.ContainerLogMaxFiles,
		Observe:  metrics.ObserveLogRotation,
	})
	if err != nil {
		return nil, fmt.Errorf("container log rotation (--container-log-max-size %s, --container-log-max-files %s): %w",
			opts.ContainerLogMaxSize, strconv.Itoa(opts.ContainerLogMaxFiles), err)
	}
	return r.Run, nil
}

// nodeAPI builds the node API server (nil when it is not to be served; the
// reason is logged), the container log rotation loop, which runs either
// way, and the endpoints' dependencies, which the read-only server shares.
func nodeAPI(opts *options.Options, d apiServerDeps) (*server.Server, func(context.Context) error, server.APIDeps, error) {
	rotate, err := newLogRotator(opts, d.runtime)
	if err != nil {
		return nil, nil, server.APIDeps{}, err
	}
	deps, err := apiDeps(opts, d)
	if err != nil {
		return nil, nil, server.APIDeps{}, err
	}
	s, err := newAPIServer(opts, d, deps)
	if errors.Is(err, errNoNodeAPI) {
		klog.InfoS("Not serving the node API", "reason", err)
		return nil, rotate, deps, nil
	}
	if err != nil {
		return nil, nil, server.APIDeps{}, err
	}
	return s, rotate, deps, nil
}
