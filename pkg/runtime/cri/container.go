package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a container in a sandbox and returns its ID.
// sandboxConfig must be the config the sandbox was created from (or one
// built the same way); runtimes read pod-level settings from it.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandboxID,
		Config:        config,
		SandboxConfig: sandboxConfig,
	})
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", config.GetMetadata().GetName(), classify(err))
	}
	if resp.ContainerId == "" {
		return "", fmt.Errorf("create container %q: runtime returned no container ID", config.GetMetadata().GetName())
	}
	return resp.ContainerId, nil
}

// StartContainer starts a created container. The caller's cancellation does
// not interrupt it (see uninterruptible); the timeout still bounds it.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(uninterruptible(ctx), c.timeout)
	defer cancel()
	if _, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("start container %s: %w", id, classify(err))
	}
	return nil
}

// StopContainer stops a container: the runtime sends its stop signal
// (SIGTERM unless the image says otherwise) and SIGKILL once grace has
// passed. grace is rounded up to whole seconds, the CRI's unit; 0 kills at
// once. The call may take grace plus the ordinary timeout.
func (c *Client) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	secs := int64((grace + time.Second - 1) / time.Second)
	if secs < 0 {
		secs = 0
	}
	ctx, cancel := c.ctx(ctx, time.Duration(secs)*time.Second+c.timeout)
	defer cancel()
	if _, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: secs}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, classify(err))
	}
	return nil
}

// RemoveContainer removes a container; a running one is killed first.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	if _, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("remove container %s: %w", id, classify(err))
	}
	return nil
}

// ListContainers lists containers matching filter (nil: all). The
// containers are shared with other callers (see listcache.go): read only.
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	if filter == nil {
		items, err := listAll(ctx, c, methodListContainers, &runtimeapi.ListContainersRequest{}, c.lists.containers)
		if err != nil {
			return nil, fmt.Errorf("list containers: %w", classify(err))
		}
		return items, nil
	}
	resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", classify(err))
	}
	return resp.Containers, nil
}

// ContainerStatus returns the full status of one container, including exit
// code and start/finish times that ListContainers leaves out.
func (c *Client) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatus, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("container status %s: %w", id, classify(err))
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("container status %s: %w", id, classify(status.Error(codes.NotFound, "no status in response")))
	}
	return resp.Status, nil
}

// ContainerCgroup returns the cgroups path the runtime gave the container
// (its OCI spec's linux.cgroupsPath, e.g. /k8s.io/<id> under containerd with
// no cgroup parent), read from the verbose status. It never changes for a
// container, so callers may cache it by ID.
func (c *Client) ContainerCgroup(ctx context.Context, id string) (string, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return "", fmt.Errorf("container status %s: %w", id, classify(err))
	}
	var info struct {
		RuntimeSpec struct {
			Linux struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil {
		return "", fmt.Errorf("container %s verbose info: %w", id, err)
	}
	if info.RuntimeSpec.Linux.CgroupsPath == "" {
		return "", fmt.Errorf("container %s: no cgroups path in verbose info", id)
	}
	return info.RuntimeSpec.Linux.CgroupsPath, nil
}

// ContainerStats returns resource usage of one container.
func (c *Client) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("container stats %s: %w", id, classify(err))
	}
	return resp.Stats, nil
}

// ListContainerStats returns resource usage of the containers matching
// filter (nil: all).
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list container stats: %w", classify(err))
	}
	return resp.Stats, nil
}

// ReopenContainerLog makes the runtime reopen the container's log file,
// after log rotation moved it away.
func (c *Client) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	if _, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("reopen container log %s: %w", id, classify(err))
	}
	return nil
}

// ExecSync runs cmd in the container and waits for it, at most timeout
// (0: no limit but the ordinary call timeout).
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	secs := int64((timeout + time.Second - 1) / time.Second)
	ctx, cancel := c.ctx(ctx, timeout+c.timeout)
	defer cancel()
	resp, err := c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, classify(err))
	}
	return resp, nil
}

// Exec returns the URL of the runtime's streaming server for an exec
// session.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (string, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.Exec(ctx, req)
	if err != nil {
		return "", fmt.Errorf("exec in container %s: %w", req.GetContainerId(), classify(err))
	}
	return resp.Url, nil
}

// Attach returns the URL of the runtime's streaming server for attaching to
// the container's stdio.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (string, error) {
	ctx, cancel := c.ctx(ctx, c.timeout)
	defer cancel()
	resp, err := c.rt.Attach(ctx, req)
	if err != nil {
		return "", fmt.Errorf("attach to container %s: %w", req.GetContainerId(), classify(err))
	}
	return resp.Url, nil
}

// CheckpointContainer asks the runtime to write a checkpoint archive of the
// running container to location (a path on the node), waiting at most
// timeout (0: the ordinary call timeout). A runtime without checkpointing
// answers ErrUnimplemented.
func (c *Client) CheckpointContainer(ctx context.Context, id, location string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = c.timeout
	}
	ctx, cancel := c.ctx(ctx, timeout)
	defer cancel()
	_, err := c.rt.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{
		ContainerId: id, Location: location, Timeout: int64((timeout + time.Second - 1) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("checkpoint container %s: %w", id, classify(err))
	}
	return nil
}
