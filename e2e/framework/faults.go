//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Fault injection for the fault suite: crash nodelet, stop and restart the
// runtime under it, look at the IP reservations pods hold.

// ipamStore is hack/lib.sh's NODELET_IPAM_DIR/NODELET_CNI_NETWORK: the
// host-local store every runtime on this host shares.
const ipamStore = "/run/nodelet/ipam/nodelet"

// Kill crashes nodelet (SIGKILL) and waits for the process to be gone:
// nothing of its own shutdown runs. Start runs it again.
func (n *Nodelet) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
	n.out.Close()
	n.cmd = nil
}

// Pid is the running nodelet's process ID, 0 when it is not running.
func (n *Nodelet) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// StopContainerd sends sig to the runtime's containerd and waits until it
// has exited (SIGKILL after a minute). The shims, and so the containers,
// outlive it, as they do when containerd crashes or is upgraded.
func (r *Runtime) StopContainerd(sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(r.StateDir, "containerd.pid"))
	if err != nil {
		return fmt.Errorf("containerd pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("containerd pid file holds %q", b)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal containerd (pid %d): %w", pid, err)
	}
	gone := func(context.Context) (bool, error) { return !processAlive(pid), nil }
	if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, gone) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, gone); err != nil {
			return fmt.Errorf("containerd (pid %d) did not exit", pid)
		}
	}
	return nil
}

// RestartContainerd starts containerd again on the runtime's state dir, with
// its config and everything it had (hack/runtime-up.sh reuses a state dir).
func (r *Runtime) RestartContainerd() error {
	_, err := runtimeUp(r.StateDir)
	return err
}

// IPReservations returns the pod IPs reserved in the shared host-local IPAM
// store by sandboxes of this runtime, each with the ID of the sandbox (CNI
// container ID) that holds it. The store is shared by every runtime on the
// host, so a reservation counts as this runtime's when its owner asked this
// runtime's host-local for an address (hack/runtime-up.sh notes each one in
// cni/ids): a test running beside another one sees only its own, and a
// reservation by a sandbox that no listing ever showed still counts.
func (r *Runtime) IPReservations() (map[string]string, error) {
	ids, err := r.cniSandboxIDs()
	if err != nil {
		return nil, err
	}
	all, err := hostIPReservations()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for ip, owner := range all {
		if ids[owner] {
			out[ip] = owner
		}
	}
	return out, nil
}

// cniSandboxIDs are the sandboxes of this runtime that ever called
// host-local, from the wrapper's notes.
func (r *Runtime) cniSandboxIDs() (map[string]bool, error) {
	path := filepath.Join(r.StateDir, "cni", "ids")
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		// Nothing asked for an address yet, if the wrapper is there.
		if _, werr := os.Stat(filepath.Join(r.StateDir, "cni", "bin", "host-local")); werr != nil {
			return nil, fmt.Errorf("runtime %s has no wrapped host-local (started by an older hack/runtime-up.sh? restart it): %w", r.StateDir, werr)
		}
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if _, id, ok := strings.Cut(strings.TrimSpace(line), " "); ok && id != "" {
			ids[id] = true
		}
	}
	return ids, nil
}

// hostIPReservations returns every reservation in the shared store, of any
// runtime on the host, by IP.
func hostIPReservations() (map[string]string, error) {
	entries, err := os.ReadDir(ipamStore)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.Count(name, ".") != 3 { // last_reserved_ip.0, lock
			continue
		}
		b, err := os.ReadFile(filepath.Join(ipamStore, name))
		if err != nil {
			if os.IsNotExist(err) {
				continue // released meanwhile
			}
			return nil, err
		}
		owner, _, _ := strings.Cut(string(b), "\n")
		out[name] = strings.TrimSpace(owner)
	}
	return out, nil
}
