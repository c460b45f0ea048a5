package cri

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox creates and starts a pod sandbox and returns its ID.
// Sandbox creation sets up the pod network, which can take longer than an
// ordinary call, so it gets twice the timeout. The caller's cancellation
// does not interrupt it (see uninterruptible).
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	ctx, cancel := c.ctx(uninterruptible(ctx), 2*c.timeout)
	defer cancel()
	resp, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", fmt.Errorf("run pod sandbox %s: %w", sandboxName(config), classify(err))
	}
	if resp.PodSandboxId == "" {
		return "", fmt.Errorf("run pod sandbox %s: runtime returned no sandbox ID", sandboxName(config))
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox stops every container of the sandbox and tears its network
// down. Stopping a stopped sandbox succeeds.
func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx, 2*c.timeout)
	defer cancel()
	if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("stop pod sandbox %s: %w", id, classify(err))
	}
	return nil
}

// RemovePodSandbox removes a sandbox and its containers.
func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", id, classify(err))
	}
	return nil
}

// PodSandboxStatus returns the status of one sandbox (state, IPs, namespace
// modes).
func (c *Client) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatus, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("pod sandbox status %s: %w", id, classify(err))
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("pod sandbox status %s: %w", id, classify(status.Error(codes.NotFound, "no status in response")))
	}
	return resp.Status, nil
}

// ListPodSandbox lists sandboxes matching filter (nil: all). The sandboxes
// are shared with other callers (see listcache.go): read only.
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	if filter == nil {
		items, err := listAll(ctx, c, methodListPodSandbox, &runtimeapi.ListPodSandboxRequest{}, c.lists.sandboxes)
		if err != nil {
			return nil, fmt.Errorf("list pod sandboxes: %w", classify(err))
		}
		return items, nil
	}
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", classify(err))
	}
	return resp.Items, nil
}

// ListPodSandboxStats returns pod-level resource usage of the sandboxes
// matching filter (nil: all). Runtimes that cannot measure a sandbox fail
// the call (containerd 1.6 for sandboxes without a cgroup parent).
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list pod sandbox stats: %w", classify(err))
	}
	return resp.Stats, nil
}

// SandboxPID returns the PID of the sandbox's process, whose namespaces are
// the pod's. The CRI has no field for it: it is the "pid" of the verbose
// status info, where containerd and CRI-O both report it.
func (c *Client) SandboxPID(ctx context.Context, id string) (int, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("pod sandbox status %s: %w", id, classify(err))
	}
	var info struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		return 0, fmt.Errorf("pod sandbox %s verbose info: %w", id, err)
	}
	if info.PID <= 0 {
		return 0, fmt.Errorf("pod sandbox %s: no pid in verbose info", id)
	}
	return info.PID, nil
}

// PortForward returns the URL of the runtime's streaming server for a port
// forward into the sandbox.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.PortForward(ctx, req)
	if err != nil {
		return "", fmt.Errorf("port forward %s: %w", req.GetPodSandboxId(), classify(err))
	}
	return resp.Url, nil
}

func sandboxName(config *runtimeapi.PodSandboxConfig) string {
	m := config.GetMetadata()
	return fmt.Sprintf("%s/%s (attempt %d)", m.GetNamespace(), m.GetName(), m.GetAttempt())
}
