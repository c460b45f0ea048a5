package cri

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// detailedInstances is how many instances per container name get a
// ContainerStatus call: the latest (its state, exit code and times drive
// every decision) and the one before (the "last state" a pod status shows).
// Older instances are described from the list alone: ID, state, creation
// time; they only matter to housekeeping.
const detailedInstances = 2

// PodStatus reads what the runtime has for one pod UID. It costs one
// ListPodSandbox and one ListContainers (run concurrently), plus, also
// concurrently, PodSandboxStatus for the newest sandbox when it is ready and
// not host-network (for its IP), and ContainerStatus for the newest two
// instances of each container. Sandboxes and containers come newest first.
// A pod with nothing in the runtime yields an empty status, not an error.
func (c *Client) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*runtime.PodStatus, error) {
	sel := map[string]string{LabelPodUID: string(uid)}
	var (
		sandboxes  []*runtimeapi.PodSandbox
		containers []*runtimeapi.Container
		sbErr      error
		ctrErr     error
		wg         sync.WaitGroup
	)
	wg.Go(func() {
		sandboxes, sbErr = c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	})
	wg.Go(func() {
		containers, ctrErr = c.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	})
	wg.Wait()
	if err := errors.Join(sbErr, ctrErr); err != nil {
		return nil, fmt.Errorf("status of pod %s/%s (%s): %w", namespace, name, uid, err)
	}

	ps := &runtime.PodStatus{UID: uid, Name: name, Namespace: namespace}
	sortSandboxes(sandboxes)
	sortContainers(containers)
	for _, sb := range sandboxes {
		ps.Sandboxes = append(ps.Sandboxes, sandboxFromList(sb))
	}

	// Fan the detail calls out; each goroutine writes only its own slot.
	details := make([]*runtimeapi.ContainerStatus, len(containers))
	messages := make([]string, len(containers))
	errs := make([]error, len(containers)+1)
	var detailWG sync.WaitGroup
	if len(sandboxes) > 0 && needsSandboxStatus(sandboxes[0]) {
		detailWG.Go(func() {
			st, err := c.PodSandboxStatus(ctx, sandboxes[0].Id, false)
			if err != nil {
				errs[len(containers)] = err
				return
			}
			applySandboxStatus(ps.Sandboxes[0], st)
		})
	}
	seen := map[string]int{}
	for i, ctr := range containers {
		n := ctr.GetMetadata().GetName()
		if seen[n] >= detailedInstances {
			continue
		}
		seen[n]++
		detailWG.Go(func() {
			details[i], errs[i] = c.ContainerStatus(ctx, ctr.Id, false)
			if st := details[i]; st != nil && st.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				id, _ := ParseContainerIdentity(ctr.Labels, ctr.Annotations)
				messages[i] = terminationMessage(ctx, st, id)
			}
		})
	}
	detailWG.Wait()

	for i, ctr := range containers {
		if err := errs[i]; err != nil {
			// Removed between list and status: it is simply gone.
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("status of pod %s/%s (%s): %w", namespace, name, uid, err)
		}
		cs, err := containerStatus(ctr, details[i])
		if errors.Is(err, ErrNotManaged) {
			continue
		}
		if err != nil {
			klog.V(4).InfoS("Container has malformed identity", "containerID", ctr.Id, "err", err)
		}
		cs.Message = withTerminationMessage(cs.Message, messages[i])
		ps.Containers = append(ps.Containers, cs)
	}
	if err := errs[len(containers)]; err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("status of pod %s/%s (%s): %w", namespace, name, uid, err)
	}
	return ps, nil
}

// ListPods returns every pod that has a sandbox or container carrying kubelet
// identity labels, with the IDs and states of what exists, newest first, and
// the config source recorded on its newest sandbox. It
// costs exactly two concurrent list calls, so relisting every second stays
// cheap.
func (c *Client) ListPods(ctx context.Context) ([]*runtime.Pod, error) {
	var (
		sandboxes  []*runtimeapi.PodSandbox
		containers []*runtimeapi.Container
		sbErr      error
		ctrErr     error
		wg         sync.WaitGroup
	)
	wg.Go(func() { sandboxes, sbErr = c.ListPodSandbox(ctx, nil) })
	wg.Go(func() { containers, ctrErr = c.ListContainers(ctx, nil) })
	wg.Wait()
	if err := errors.Join(sbErr, ctrErr); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return groupPods(sandboxes, containers), nil
}

// groupPods groups listed sandboxes and containers by pod UID, skipping
// those without kubelet identity.
func groupPods(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) []*runtime.Pod {
	sortSandboxes(sandboxes)
	sortContainers(containers)
	byUID := map[types.UID]*runtime.Pod{}
	var order []types.UID
	pod := func(uid types.UID, name, namespace string) *runtime.Pod {
		p, ok := byUID[uid]
		if !ok {
			p = &runtime.Pod{UID: uid, Name: name, Namespace: namespace}
			byUID[uid] = p
			order = append(order, uid)
		}
		return p
	}
	for _, sb := range sandboxes {
		id, err := ParseSandboxIdentity(sb.Labels, sb.Annotations)
		if errors.Is(err, ErrNotManaged) {
			continue
		}
		p := pod(id.PodUID, id.PodName, id.PodNamespace)
		if p.Source == "" {
			// Sandboxes carry the pod's annotations, config.source among them.
			p.Source = sb.Annotations[podutil.ConfigSourceAnnotationKey]
		}
		p.Sandboxes = append(p.Sandboxes, runtime.SandboxRef{
			ID:        sb.Id,
			State:     SandboxState(sb.State),
			Attempt:   sb.GetMetadata().GetAttempt(),
			CreatedAt: TimeFromUnixNano(sb.CreatedAt),
		})
	}
	for _, ctr := range containers {
		id, err := ParseContainerIdentity(ctr.Labels, ctr.Annotations)
		if errors.Is(err, ErrNotManaged) {
			continue
		}
		p := pod(id.PodUID, id.PodName, id.PodNamespace)
		p.Containers = append(p.Containers, runtime.ContainerRef{
			ID:        ctr.Id,
			Name:      id.ContainerName,
			State:     ContainerState(ctr.State),
			SandboxID: ctr.PodSandboxId,
			CreatedAt: TimeFromUnixNano(ctr.CreatedAt),
		})
	}
	pods := make([]*runtime.Pod, 0, len(order))
	for _, uid := range order {
		pods = append(pods, byUID[uid])
	}
	return pods
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

func sandboxFromList(sb *runtimeapi.PodSandbox) *runtime.SandboxStatus {
	id, _ := ParseSandboxIdentity(sb.Labels, sb.Annotations)
	return &runtime.SandboxStatus{
		ID:          sb.Id,
		State:       SandboxState(sb.State),
		CreatedAt:   TimeFromUnixNano(sb.CreatedAt),
		Attempt:     sb.GetMetadata().GetAttempt(),
		HostNetwork: id.HostNetwork,
	}
}

func applySandboxStatus(s *runtime.SandboxStatus, st *runtimeapi.PodSandboxStatus) {
	s.State = SandboxState(st.State)
	s.HostNetwork = st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	if ip := st.GetNetwork().GetIp(); ip != "" {
		s.IP = ip
		s.IPs = append(s.IPs, ip)
	}
	for _, extra := range st.GetNetwork().GetAdditionalIps() {
		if extra.GetIp() != "" {
			s.IPs = append(s.IPs, extra.GetIp())
		}
	}
}

// containerStatus builds a runtime.ContainerStatus from list data and, when
// fetched, the detailed status. The error is the identity parse error; on
// ErrMalformedIdentity the status is still usable.
func containerStatus(ctr *runtimeapi.Container, st *runtimeapi.ContainerStatus) (*runtime.ContainerStatus, error) {
	id, err := ParseContainerIdentity(ctr.Labels, ctr.Annotations)
	cs := &runtime.ContainerStatus{
		ID:                     ctr.Id,
		Name:                   id.ContainerName,
		State:                  ContainerState(ctr.State),
		CreatedAt:              TimeFromUnixNano(ctr.CreatedAt),
		Image:                  ctr.GetImage().GetImage(),
		ImageRef:               ctr.ImageRef,
		Hash:                   id.Hash,
		RestartCount:           id.RestartCount,
		SandboxID:              ctr.PodSandboxId,
		TerminationGracePeriod: id.TerminationGracePeriod,
		TerminationMessagePath: id.TerminationMessagePath,
	}
	if _, ok := ctr.Annotations[AnnotationContainerRestartCount]; !ok {
		// Identity from elsewhere without the annotation: the CRI attempt
		// is the same number.
		cs.RestartCount = int(ctr.GetMetadata().GetAttempt())
	}
	if st != nil {
		cs.State = ContainerState(st.State)
		cs.StartedAt = TimeFromUnixNano(st.StartedAt)
		cs.FinishedAt = TimeFromUnixNano(st.FinishedAt)
		cs.ExitCode = st.ExitCode
		cs.Reason = st.Reason
		cs.Message = st.Message
		cs.LogPath = st.LogPath
		if img := st.GetImage().GetImage(); img != "" {
			cs.Image = img
		}
		if st.ImageRef != "" {
			cs.ImageRef = st.ImageRef
		}
	}
	return cs, err
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

// SandboxState is s in nodelet's runtime model.
func SandboxState(s runtimeapi.PodSandboxState) runtime.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return runtime.SandboxStateReady
	}
	return runtime.SandboxStateNotReady
}

// ContainerState is s in nodelet's runtime model.
func ContainerState(s runtimeapi.ContainerState) runtime.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return runtime.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return runtime.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return runtime.ContainerStateExited
	default:
		return runtime.ContainerStateUnknown
	}
}

// TimeFromUnixNano is a CRI timestamp as a time; 0 (not set) is the zero
// time, not 1970.
func TimeFromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
