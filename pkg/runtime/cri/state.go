package cri

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// detailedInstances is how many instances per container name get a
// ContainerStatus call: the latest (its state, exit code and times drive
// every decision) and the one before (the "last state" a pod status shows).
// Older instances are described from the list alone: ID, state, creation
// time; they only matter to housekeeping.
const detailedInstances = 2

// PodState is what the runtime listed, as the CRI returns it: sandboxes and
// containers newest first, with the details fetched for some of them.
// Package cristatus reads it as nodelet's runtime model.
type PodState struct {
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
	// SandboxStatus is Sandboxes[0]'s status when it was fetched (a ready
	// pod-network sandbox: its IPs); nil otherwise.
	SandboxStatus *runtimeapi.PodSandboxStatus
	// ContainerStatuses are by index in Containers: the newest two
	// instances of each container name have theirs, the others nil. Empty
	// for a list of all pods.
	ContainerStatuses []*runtimeapi.ContainerStatus
}

// PodState reads what the runtime has for one pod UID. It costs one
// ListPodSandbox and one ListContainers (run concurrently), plus, also
// concurrently, PodSandboxStatus for the newest sandbox when it is ready and
// not host-network (for its IP), and ContainerStatus for the newest two
// instances of each container. A container removed between the list and its
// status call is left out (it is simply gone), a sandbox is left without
// details. A pod with nothing in the runtime yields an empty state, not an
// error.
func (c *Client) PodState(ctx context.Context, uid types.UID) (*PodState, error) {
	sel := map[string]string{LabelPodUID: string(uid)}
	s, err := c.list(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel}, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}

	// Fan the detail calls out; each goroutine writes only its own slot.
	s.ContainerStatuses = make([]*runtimeapi.ContainerStatus, len(s.Containers))
	errs := make([]error, len(s.Containers)+1)
	var wg sync.WaitGroup
	if len(s.Sandboxes) > 0 && needsSandboxStatus(s.Sandboxes[0]) {
		wg.Go(func() { s.SandboxStatus, errs[len(s.Containers)] = c.PodSandboxStatus(ctx, s.Sandboxes[0].Id, false) })
	}
	seen := map[string]int{}
	for i, ctr := range s.Containers {
		n := ctr.GetMetadata().GetName()
		if seen[n] >= detailedInstances {
			continue
		}
		seen[n]++
		wg.Go(func() { s.ContainerStatuses[i], errs[i] = c.ContainerStatus(ctx, ctr.Id, false) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	kept := 0
	for i, ctr := range s.Containers {
		if errs[i] != nil {
			continue
		}
		s.Containers[kept], s.ContainerStatuses[kept] = ctr, s.ContainerStatuses[i]
		kept++
	}
	s.Containers, s.ContainerStatuses = s.Containers[:kept], s.ContainerStatuses[:kept]
	return s, nil
}

// ListState lists every sandbox and container, newest first, without
// details. It costs exactly two concurrent list calls, so relisting every
// second stays cheap.
func (c *Client) ListState(ctx context.Context) (*PodState, error) {
	s, err := c.list(ctx, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return s, nil
}

func (c *Client) list(ctx context.Context, sbFilter *runtimeapi.PodSandboxFilter, ctrFilter *runtimeapi.ContainerFilter) (*PodState, error) {
	var (
		s             PodState
		sbErr, ctrErr error
		wg            sync.WaitGroup
	)
	wg.Go(func() { s.Sandboxes, sbErr = c.ListPodSandbox(ctx, sbFilter) })
	wg.Go(func() { s.Containers, ctrErr = c.ListContainers(ctx, ctrFilter) })
	wg.Wait()
	if err := errors.Join(sbErr, ctrErr); err != nil {
		return nil, err
	}
	sortSandboxes(s.Sandboxes)
	sortContainers(s.Containers)
	return &s, nil
}

// needsSandboxStatus reports whether the listed sandbox needs a status call:
// only a ready pod-network sandbox has an IP worth knowing. An old or dead
// sandbox is going to be replaced, whatever its details.
func needsSandboxStatus(sb *runtimeapi.PodSandbox) bool {
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return false
	}
	id, _ := ParseSandboxIdentity(sb.Labels, sb.Annotations)
	return !id.HostNetwork
}

func sortSandboxes(s []*runtimeapi.PodSandbox) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].CreatedAt != s[j].CreatedAt {
			return s[i].CreatedAt > s[j].CreatedAt
		}
		return s[i].GetMetadata().GetAttempt() > s[j].GetMetadata().GetAttempt()
	})
}

func sortContainers(s []*runtimeapi.Container) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].CreatedAt != s[j].CreatedAt {
			return s[i].CreatedAt > s[j].CreatedAt
		}
		return s[i].GetMetadata().GetAttempt() > s[j].GetMetadata().GetAttempt()
	})
}
