// Package lifecycle runs a container's postStart and preStop hooks: exec
// (through the runtime's ExecSync), httpGet and sleep, with the upstream
// kubelet's semantics and failure messages. It decides nothing about when a
// hook runs or what a failure does; podsync does.
package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxBody is how much of an HTTP hook's answer is read (and thrown away) so
// that its connection could be reused; an endless body costs no more.
const maxBody = 10 << 10

// userAgent is what upstream sends for lifecycle HTTP hooks.
const userAgent = "kube-lifecycle/1.37"

// Execer runs a command in a container to completion.
type Execer interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
}

// Target is the container a hook runs against.
type Target struct {
	Pod       *v1.Pod
	Container *v1.Container
	// ID is the runtime's container ID.
	ID string
	// PodIP is the host of an httpGet hook that names none ("" when the
	// pod has no IP yet: such a hook fails).
	PodIP string
}

// Runner runs hooks. The zero value is not usable; use New.
type Runner struct {
	exec   Execer
	client *http.Client
}

// New returns a Runner executing commands through exec.
func New(exec Execer) *Runner {
	return &Runner{exec: exec, client: newHTTPClient()}
}

func newHTTPClient() *http.Client {
	tr := &http.Transport{
		// Hooks talk to pods, never through a proxy, and check no
		// certificate, as upstream.
		Proxy:             nil,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream behaviour for hooks
		DisableKeepAlives: true,
		DialContext:       (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	}
	return &http.Client{Transport: tr}
}

// ErrInvalidHandler: the handler names no action nodelet knows.
var ErrInvalidHandler = errors.New("invalid handler")

// Run runs h against t and waits for it (or for ctx). On failure it returns
// the message upstream reports for it along with the error.
func (r *Runner) Run(ctx context.Context, t Target, h *v1.LifecycleHandler) (string, error) {
	c := t.Container
	switch {
	case h.Exec != nil:
		out, err := r.runExec(ctx, t.ID, h.Exec.Command)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podDesc(t.Pod), err, out), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := r.runHTTP(ctx, t, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podDesc(t.Pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := sleep(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podDesc(t.Pod), err), err
		}
		return "", nil
	default:
		err := fmt.Errorf("%w: %v", ErrInvalidHandler, h)
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
}

// runExec runs cmd with no timeout of its own (as upstream), and fails on a
// non-zero exit. The output is returned for the failure message.
func (r *Runner) runExec(ctx context.Context, id string, cmd []string) (string, error) {
	resp, err := r.exec.ExecSync(ctx, id, cmd, 0)
	if err != nil {
		return "", err
	}
	out := string(resp.GetStdout()) + string(resp.GetStderr())
	if code := resp.GetExitCode(); code != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, resp.GetStderr())
	}
	return out, nil
}

func sleep(ctx context.Context, seconds int64) error {
	t := time.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}

// runHTTP sends the hook's GET. Like upstream, only a failed exchange is a
// failure, whatever the status code; an HTTPS hook answered in plain HTTP
// is retried over HTTP.
func (r *Runner) runHTTP(ctx context.Context, t Target, g *v1.HTTPGetAction) error {
	req, err := NewRequest(ctx, g, t.Container, t.PodIP)
	if err != nil {
		return err
	}
	err = r.do(req)
	if isHTTPAnswerToHTTPS(err) {
		plain := req.Clone(ctx)
		plain.URL.Scheme = "http"
		plain.Header.Del("Authorization")
		if r.do(plain) == nil {
			return nil
		}
	}
	return err
}

func (r *Runner) do(req *http.Request) error {
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return nil
}

// isHTTPAnswerToHTTPS recognises the TLS client's error for a server that
// answered in plain HTTP; net/http offers no typed error for it.
func isHTTPAnswerToHTTPS(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}

// NewRequest builds the GET of an httpGet action against container c:
// host defaults to podIP, the port may be a name from c's ports, and the
// action's headers are sent (a Host header sets the request's host).
func NewRequest(ctx context.Context, g *v1.HTTPGetAction, c *v1.Container, podIP string) (*http.Request, error) {
	host := g.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return nil, errors.New("failed to find networking container: pod has no IP")
	}
	port, err := ResolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path))
	if err != nil {
		return nil, fmt.Errorf("hook URL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("hook request: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}

// ResolvePort turns a port number or the name of one of c's ports into a
// number.
func ResolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		if n <= 0 || n > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", n)
		}
		return n, nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("couldn't find port: %q in container %q", p.StrVal, containerName(c))
}

func containerName(c *v1.Container) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// podDesc formats a pod the way upstream messages do: name_ns(uid).
func podDesc(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
