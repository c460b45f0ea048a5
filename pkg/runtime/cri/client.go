// Package cri is nodelet's one client of a CRI container runtime
// (containerd, CRI-O) over gRPC: it owns the connection, the timeout of every
// call (one policy, see Options), the classification of runtime errors
// (ErrNotFound, ...) and the identity labels stamped on what it creates.
// Its consumers (podsync, gc, images, stats, pleg) each declare the small
// interface they need, which *Client satisfies. Its calls are thin, besides
// reading a pod's or the node's state in as few calls as possible
// (state.go); what it returns are CRI types. The one piece of the pod it
// knows is the identity stamped on sandboxes and containers (identity.go).
// The translations are elsewhere, pure: a pod to CRI configs in package
// criconfig, CRI state to nodelet's runtime model in package cristatus.
package cri

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/tracing"
)

// Defaults for Options.
const (
	// DefaultTimeout bounds a runtime call: upstream's
	// --runtime-request-timeout default. Calls normally take milliseconds,
	// but under a burst of pod starts containerd queues them for seconds;
	// giving up early leaves a half-done operation behind (a container
	// created but not started) and costs more than waiting. A pod's calls
	// run on its own worker, so a slow call never blocks another pod.
	DefaultTimeout = 2 * time.Minute
	// maxMsgSize allows large list responses on busy nodes (a few thousand
	// containers with their labels and annotations).
	maxMsgSize = 16 << 20
)

// Errors a caller may want to act on, classified from gRPC status codes.
// They wrap the original error, so the runtime's message is kept.
var (
	// ErrNotFound: the sandbox, container or image does not exist (any more).
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the runtime cannot be reached.
	ErrUnavailable = errors.New("runtime unavailable")
	// ErrUnimplemented: the runtime does not implement the call.
	ErrUnimplemented = errors.New("not implemented by runtime")
	// ErrTimeout: the call did not finish within its timeout.
	ErrTimeout = errors.New("runtime call timed out")
)

// Options tune a Client. Zero values mean the defaults.
//
// The timeouts are one policy for every caller, so that a call takes as long
// whoever makes it: an ordinary call is bounded by Timeout; one that sets up
// or tears down the pod network (RunPodSandbox, StopPodSandbox) by twice
// that; one that waits for the container (StopContainer, ExecSync) by its
// own wait plus Timeout; a pull only by the caller's context and
// PullTimeout. A caller's shorter deadline still wins.
type Options struct {
	// Timeout bounds an ordinary call; see above for the others.
	Timeout time.Duration
	// PullTimeout bounds an image pull; 0: only the caller's context
	// does, as upstream (a large image on a slow link may take long; the
	// pull is cancelled when the pod it is for goes away).
	PullTimeout time.Duration
	// Tracing gives every call a span on this provider (nil: no spans).
	Tracing trace.TracerProvider
}

// reconnect paces the reconnects to a runtime that went away. gRPC's
// default backs off up to two minutes, made for remote servers; the runtime
// is a local socket, cheap to try, and while it is away every pod's sync
// fails: after a 10 s containerd restart the default left a new pod waiting
// up to 13 s more for the next attempt (measured, TestFaultContainerdRestart*).
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// Client talks to one CRI runtime. It is safe for concurrent use.
type Client struct {
	conn        *grpc.ClientConn
	rt          runtimeapi.RuntimeServiceClient
	img         runtimeapi.ImageServiceClient
	timeout     time.Duration
	pullTimeout time.Duration
	lists       listCaches
}

// Dial connects to the runtime at endpoint (unix:///path/to.sock, or a bare
// absolute path) and checks that it answers the v1 CRI Version call.
func Dial(ctx context.Context, endpoint string, opts ...Options) (*Client, error) {
	target, err := dialTarget(endpoint)
	if err != nil {
		return nil, err
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMsgSize),
			grpc.MaxCallSendMsgSize(maxMsgSize),
		),
		grpc.WithUnaryInterceptor(traceCalls),
		grpc.WithConnectParams(reconnect),
	}
	for _, o := range opts {
		dialOpts = append(dialOpts, tracing.GRPCDialOptions(o.Tracing)...)
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial runtime %s: %w", endpoint, err)
	}
	c := &Client{
		conn:    conn,
		rt:      runtimeapi.NewRuntimeServiceClient(conn),
		img:     runtimeapi.NewImageServiceClient(conn),
		timeout: DefaultTimeout,
		lists:   newListCaches(),
	}
	for _, o := range opts {
		if o.Timeout > 0 {
			c.timeout = o.Timeout
		}
		if o.PullTimeout > 0 {
			c.pullTimeout = o.PullTimeout
		}
	}
	// grpc.NewClient connects lazily; one call proves the endpoint is a v1
	// CRI runtime now instead of at the first pod.
	if _, err := c.Version(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("dial runtime %s: %w", endpoint, err)
	}
	return c, nil
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

func dialTarget(endpoint string) (string, error) {
	if strings.HasPrefix(endpoint, "/") {
		return "unix://" + endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("runtime endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "unix" {
		return "", fmt.Errorf("runtime endpoint %q: only unix:// endpoints are supported", endpoint)
	}
	if u.Path == "" {
		return "", fmt.Errorf("runtime endpoint %q: no socket path", endpoint)
	}
	return "unix://" + u.Path, nil
}

// uninterruptible detaches a call that changes the runtime's state from its
// caller's cancellation (a sync abandoned because its pod went away) but
// keeps the caller's values. Cancelled half-way, such a call can leave what
// no later call repairs: in the churn soak (e2e/soak_test.go) a pod deleted
// while its containers started left a container containerd would neither
// stop (not running, it said) nor remove (its task still ran), and its
// sandbox with it; with start calls run to completion it did not recur. A
// RunPodSandbox cut off in the network set-up risks the same for its pod IP.
// Finished, the call leaves a container or sandbox the killer stops as it
// stops any other.
func uninterruptible(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}

// ctx bounds one runtime call by d, within the caller's own deadline.
func (c *Client) ctx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// classify wraps a gRPC error with the sentinel matching its code, keeping
// the original for its message and for status.Code.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	switch status.Code(err) {
	case codes.NotFound:
		sentinel = ErrNotFound
	case codes.Unavailable:
		sentinel = ErrUnavailable
	case codes.Unimplemented:
		sentinel = ErrUnimplemented
	case codes.DeadlineExceeded:
		sentinel = ErrTimeout
	default:
		return err
	}
	return &classified{sentinel: sentinel, err: err}
}

// classified is an error that is both its sentinel (errors.Is) and the gRPC
// error underneath (errors.As, status.Code), with the runtime's message.
type classified struct {
	sentinel error
	err      error
}

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.sentinel, e.err} }

// Version returns the runtime's name and versions.
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return nil, fmt.Errorf("runtime version: %w", classify(err))
	}
	return resp, nil
}

// Status returns the runtime's conditions (RuntimeReady, NetworkReady).
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("runtime status: %w", classify(err))
	}
	return resp, nil
}

// traceCalls logs every CRI call with its duration at -v=6: where a pod's
// start spends its time, without a profiler.
func traceCalls(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !klog.V(6).Enabled() {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	began := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	klog.V(6).InfoS("CRI call", "method", method[strings.LastIndexByte(method, '/')+1:], "duration", time.Since(began), "err", err)
	return err
}
