package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/lifecycle"
)

// outcome is what a handler found. A warning is a success the user should
// hear about (an HTTP probe redirected off its host).
type outcome int

const (
	outcomeSuccess outcome = iota
	outcomeWarning
	outcomeFailure
)

// maxOutput bounds what is kept of a probe's output or body: upstream's
// 10 KiB.
const maxOutput = 10 << 10

// Execer runs a command in a container to completion (cri.Client.ExecSync).
type Execer interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
}

// target of one probe run.
type probeTarget struct {
	container   *v1.Container
	containerID string
	podIP       string
}

// handlers run probes of every handler kind.
type handlers struct {
	exec      Execer
	userAgent string
}

// run runs the probe p against t once, within its timeout. An error means
// the probe could not be run at all (a bad port name, a runtime error):
// its result is thrown away. Failures, timeouts included, are outcomes.
func (h handlers) run(ctx context.Context, p *v1.Probe, t probeTarget) (outcome, string, error) {
	timeout := settingsOf(p).timeout
	switch {
	case p.Exec != nil:
		return h.runExec(ctx, p.Exec.Command, t.containerID, timeout)
	case p.HTTPGet != nil:
		return h.runHTTP(ctx, p.HTTPGet, t, timeout)
	case p.TCPSocket != nil:
		port, err := lifecycle.ResolvePort(p.TCPSocket.Port, t.container)
		if err != nil {
			return outcomeFailure, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		return runTCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		useTLS := p.GRPC.Mode != nil && *p.GRPC.Mode == v1.GRPCProbeModeTLS
		return h.runGRPC(ctx, net.JoinHostPort(t.podIP, strconv.Itoa(int(p.GRPC.Port))), service, useTLS, timeout)
	}
	return outcomeFailure, "", errors.New("probe has no handler")
}

// runExec runs the command through the runtime: exit 0 is a success, any
// other exit code or a timeout a failure. The output (stdout, then stderr)
// is what the Unhealthy event shows.
func (h handlers) runExec(ctx context.Context, cmd []string, id string, timeout time.Duration) (outcome, string, error) {
	if h.exec == nil {
		return outcomeFailure, "", errors.New("exec probes need a container runtime")
	}
	// The runtime enforces the timeout; ours is a backstop against a
	// runtime that does not, so that a worker is never stuck.
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	resp, err := h.exec.ExecSync(ctx, id, cmd, timeout)
	if err != nil {
		if errors.Is(err, cri.ErrTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return outcomeFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return outcomeFailure, "", err
	}
	out := truncate(append(append([]byte(nil), resp.Stdout...), resp.Stderr...))
	if resp.ExitCode != 0 {
		return outcomeFailure, out, nil
	}
	return outcomeSuccess, out, nil
}

func truncate(b []byte) string {
	if len(b) > maxOutput {
		b = b[:maxOutput]
	}
	return string(b)
}

// runTCP succeeds when a connection to addr opens within the timeout.
func runTCP(ctx context.Context, addr string, timeout time.Duration) (outcome, string, error) {
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return outcomeSuccess, "", nil
}

// probeDialer's connections linger at most 1 s on close (SO_LINGER): a
// probe every second to every pod must not fill the node's table of
// connections in TIME_WAIT.
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 1})
		})
		return errors.Join(err, serr)
	}}
}
