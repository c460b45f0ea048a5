package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// Query parameters of exec and attach, as the API server sends them.
const (
	paramCommand = "command"
	paramStdin   = "input"
	paramStdout  = "output"
	paramStderr  = "error"
	paramTTY     = "tty"
	paramPort    = "port"
)

// streamOptions are the streams a client asked for.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

func parseStreamOptions(q url.Values) (streamOptions, error) {
	o := streamOptions{
		stdin:  q.Get(paramStdin) == "1",
		stdout: q.Get(paramStdout) == "1",
		stderr: q.Get(paramStderr) == "1",
		tty:    q.Get(paramTTY) == "1",
	}
	if o.tty {
		// A terminal merges stderr into stdout; asking for both is a
		// client quirk, not an error (upstream ignores stderr too).
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, fmt.Errorf("at least one of stdin, stdout and stderr is required: %w", ErrBadRequest)
	}
	return o, nil
}

// execHandler serves /exec/{namespace}/{pod}[/{uid}]/{container}: the
// runtime prepares the session and returns a URL on its streaming server,
// which listens on loopback only; the caller's upgraded connection (SPDY or
// websocket, with stdin, tty resize and the exit status on the error
// stream) is proxied there as it is.
func execHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.Exec == nil {
			return notImplemented("exec")
		}
		q := r.URL.Query()
		o, err := parseStreamOptions(q)
		if err != nil {
			return err
		}
		cmd := q[paramCommand]
		if len(cmd) == 0 {
			return fmt.Errorf("no command: %w", ErrBadRequest)
		}
		c, err := d.runningContainer(r.Context(), r)
		if err != nil {
			return err
		}
		u, err := d.Exec(r.Context(), &runtimeapi.ExecRequest{
			ContainerId: c.ID, Cmd: cmd, Tty: o.tty, Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr,
		})
		if err != nil {
			return fmt.Errorf("exec in container %q: %w", c.Name, err)
		}
		return proxyStream(withStreamIdleTimeout(w, d.StreamIdleTimeout), r, u)
	})
}

// attachHandler serves /attach/{namespace}/{pod}[/{uid}]/{container}.
func attachHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.Attach == nil {
			return notImplemented("attach")
		}
		o, err := parseStreamOptions(r.URL.Query())
		if err != nil {
			return err
		}
		c, err := d.runningContainer(r.Context(), r)
		if err != nil {
			return err
		}
		u, err := d.Attach(r.Context(), &runtimeapi.AttachRequest{
			ContainerId: c.ID, Tty: o.tty, Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr,
		})
		if err != nil {
			return fmt.Errorf("attach to container %q: %w", c.Name, err)
		}
		return proxyStream(withStreamIdleTimeout(w, d.StreamIdleTimeout), r, u)
	})
}

// portForwardHandler serves /portForward/{namespace}/{pod}[/{uid}]. Ports
// come per stream (SPDY) or as ?port= (websocket); the runtime's server
// reads them from the proxied request either way.
func portForwardHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.PortForward == nil {
			return notImplemented("port forward")
		}
		var ports []int32
		for _, v := range r.URL.Query()[paramPort] {
			for _, s := range strings.Split(v, ",") {
				n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
				if err != nil || n == 0 {
					return fmt.Errorf("port %q: %w", s, ErrBadRequest)
				}
				ports = append(ports, int32(n))
			}
		}
		p, err := d.podFromPath(r)
		if err != nil {
			return err
		}
		if d.RuntimeStatus == nil {
			return notImplemented("runtime status")
		}
		st, err := d.RuntimeStatus(r.Context(), p.UID, p.Name, p.Namespace)
		if err != nil {
			return fmt.Errorf("runtime status of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		sb := st.LatestSandbox()
		if sb == nil || sb.State != runtime.SandboxStateReady {
			return fmt.Errorf("pod %s/%s has no running sandbox: %w", p.Namespace, p.Name, ErrBadRequest)
		}
		u, err := d.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sb.ID, Port: ports})
		if err != nil {
			return fmt.Errorf("port forward to pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return proxyStream(withStreamIdleTimeout(w, d.StreamIdleTimeout), r, u)
	})
}

// runHandler serves POST /run/{namespace}/{pod}[/{uid}]/{container}?command=...:
// it runs the command to completion and answers with its stdout followed by
// its stderr. A non-zero exit is a 500 carrying the output.
func runHandler(d APIDeps) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if d.ExecSync == nil {
			return notImplemented("run")
		}
		cmd := r.URL.Query()[paramCommand]
		if len(cmd) == 0 {
			return fmt.Errorf("no command: %w", ErrBadRequest)
		}
		c, err := d.runningContainer(r.Context(), r)
		if err != nil {
			return err
		}
		resp, err := d.ExecSync(r.Context(), c.ID, cmd, 0)
		if err != nil {
			return fmt.Errorf("run in container %q: %w", c.Name, err)
		}
		out := append(append([]byte(nil), resp.Stdout...), resp.Stderr...)
		if resp.ExitCode != 0 {
			return fmt.Errorf("command %q exited with code %d: %s", strings.Join(cmd, " "), resp.ExitCode, out)
		}
		writeText(w, http.StatusOK, string(out))
		return nil
	})
}

// proxyStream hands the caller's connection to the runtime's streaming
// server at rawURL. The upgrade is required: a plain request would make the
// runtime's one-time URL useless anyway.
func proxyStream(w http.ResponseWriter, r *http.Request, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("runtime streaming URL %q: %w", rawURL, err)
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("runtime streaming URL %q is not an absolute http(s) URL", rawURL)
	}
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, streamResponder{})
	h.ServeHTTP(w, r)
	return nil
}

// streamResponder reports proxy failures the way every other handler
// reports errors.
type streamResponder struct{}

func (streamResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	if apierrors.IsBadRequest(err) {
		// The proxy's own "Upgrade request required": a client mistake.
		err = fmt.Errorf("%v: %w", err, ErrBadRequest)
	} else {
		err = fmt.Errorf("proxying stream to the runtime: %w", err)
	}
	writeError(w, r, err)
}
