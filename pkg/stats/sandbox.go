package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxStatusTimeout bounds the verbose status call behind a PID lookup.
const sandboxStatusTimeout = 5 * time.Second

// SandboxPIDFrom returns a Config.SandboxPID that reads the "pid" field of
// the runtime's verbose sandbox status, where containerd and CRI-O both
// report the sandbox process.
func SandboxPIDFrom(rs runtimeapi.RuntimeServiceClient) func(ctx context.Context, id string) (int, error) {
	return func(ctx context.Context, id string) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, sandboxStatusTimeout)
		defer cancel()
		resp, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
		if err != nil {
			return 0, fmt.Errorf("sandbox %s status: %w", id, err)
		}
		var info struct {
			PID int `json:"pid"`
		}
		if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
			return 0, fmt.Errorf("sandbox %s verbose info: %w", id, err)
		}
		if info.PID <= 0 {
			return 0, fmt.Errorf("sandbox %s: no pid in verbose info", id)
		}
		return info.PID, nil
	}
}

// SandboxStatsFrom returns a Config.SandboxStats over the runtime's
// ListPodSandboxStats.
func SandboxStatsFrom(rs runtimeapi.RuntimeServiceClient) func(ctx context.Context) ([]*runtimeapi.PodSandboxStats, error) {
	return func(ctx context.Context) ([]*runtimeapi.PodSandboxStats, error) {
		ctx, cancel := context.WithTimeout(ctx, sandboxStatusTimeout)
		defer cancel()
		resp, err := rs.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
		if err != nil {
			return nil, fmt.Errorf("list pod sandbox stats: %w", err)
		}
		return resp.Stats, nil
	}
}
