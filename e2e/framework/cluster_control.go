//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodelet/nodelet/internal/poll"
)

// Outage control: a test stops the cluster's kube-apiserver (etcd keeps the
// data) and starts it again with the same flags, to see what a node agent
// does while the API server is away.

const (
	apiserverStopTimeout  = 30 * time.Second
	apiserverReadyTimeout = 90 * time.Second
	// apiserverArgvFile keeps the stopped API server's command line (NUL
	// separated, as /proc/PID/cmdline) for StartAPIServer.
	apiserverArgvFile = "kube-apiserver.argv"
)

// StopAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 30 s) and waits
// for it to exit. The pid must still be this cluster's API server: its
// command line names this cluster's state dir.
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	pid, argv, err := c.apiserverProcess()
	if err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	if err := os.WriteFile(filepath.Join(c.StateDir, apiserverArgvFile), argv, 0o600); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	gone := func(context.Context) (bool, error) { return !processAlive(pid), nil }
	for wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, apiserverStopTimeout, true, gone) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Logf("cluster: kube-apiserver (pid %d) stopped", pid)
}

// StartAPIServer starts kube-apiserver again with the flags it had when
// StopAPIServer stopped it, waits for /readyz, and returns when the process
// was started (clients may be served before /readyz says ok).
// hack/cluster-down.sh stops the new process like the first (pid file).
func (c *Cluster) StartAPIServer(t testing.TB) time.Time {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(c.StateDir, apiserverArgvFile))
	if err != nil {
		t.Fatalf("start kube-apiserver: not stopped by StopAPIServer: %v", err)
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	logFile, err := os.OpenFile(filepath.Join(c.StateDir, "logs", "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session, as cluster-up.sh starts it: a signal to the test's
	// process group does not reach it, cluster-down does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	go func() { _ = cmd.Wait() }() // reap it whoever stops it
	if err := os.WriteFile(filepath.Join(c.StateDir, "kube-apiserver.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	poll.Within(t, apiserverReadyTimeout, "kube-apiserver ready after restart", func() (bool, string) {
		out, err := c.Kubectl("get", "--raw", "/readyz")
		if err == nil && strings.TrimSpace(out) == "ok" {
			return true, ""
		}
		return false, fmt.Sprintf("%v\n%s", err, clusterTail(filepath.Join(c.StateDir, "logs", "kube-apiserver.log"), 20))
	})
	t.Logf("cluster: kube-apiserver restarted (pid %d), ready in %s", cmd.Process.Pid, time.Since(begin).Round(time.Millisecond))
	return begin
}

// apiserverProcess returns the running API server's pid and command line.
func (c *Cluster) apiserverProcess() (int, []byte, error) {
	b, err := os.ReadFile(filepath.Join(c.StateDir, "kube-apiserver.pid"))
	if err != nil {
		return 0, nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, nil, fmt.Errorf("pid file: %w", err)
	}
	argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, nil, fmt.Errorf("kube-apiserver pid %d is not running: %w", pid, err)
	}
	if !bytes.Contains(argv, []byte(c.StateDir)) || !bytes.Contains(argv, []byte("kube-apiserver")) {
		return 0, nil, errors.New("the pid file names a process that is not this cluster's kube-apiserver")
	}
	return pid, argv, nil
}

// processAlive: the process exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// State is the field after "(comm)".
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}
