package deviceplugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// AdmissionError is a pod refused at admission for its devices.
type AdmissionError struct{ Message string }

func (e *AdmissionError) Error() string { return e.Message }

// Admit reserves the devices p's containers ask for, or returns why it
// cannot (upstream's UnexpectedAdmissionError message). Containers that
// already hold devices (a pod admitted again after a restart) keep them.
// Devices of init containers that run to completion are reused by the
// containers after them, as upstream. It is meant for one caller at a time
// (the sync loop).
func (m *Manager) Admit(ctx context.Context, p *v1.Pod) error {
	m.mu.Lock()
	known := func(name string) bool { _, ok := m.resources[name]; return ok }
	type want struct {
		c     *v1.Container
		reqs  map[string]int
		reuse bool // a run-to-completion init container: its devices pass on
	}
	var wants []want
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		reqs, err := DeviceRequests(c, known)
		if err != nil {
			m.mu.Unlock()
			return &AdmissionError{Message: err.Error()}
		}
		restartable := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		wants = append(wants, want{c, reqs, !restartable})
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		reqs, err := DeviceRequests(c, known)
		if err != nil {
			m.mu.Unlock()
			return &AdmissionError{Message: err.Error()}
		}
		wants = append(wants, want{c, reqs, false})
	}
	m.mu.Unlock()

	reusable := map[string][]string{}
	var added []Allocation
	for _, w := range wants {
		for _, name := range slices.Sorted(maps.Keys(w.reqs)) {
			n := w.reqs[name]
			devs, err := m.allocate(ctx, p.UID, w.c.Name, name, n, reusable[name], added)
			if err != nil {
				return &AdmissionError{Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
			}
			if devs == nil {
				continue // already held
			}
			added = append(added, Allocation{PodUID: p.UID, Container: w.c.Name, Resource: name, Devices: devs})
			if w.reuse {
				reusable[name] = slices.Concat(reusable[name], devs)
			} else {
				reusable[name] = slices.DeleteFunc(reusable[name], func(d string) bool { return slices.Contains(devs, d) })
			}
		}
	}
	if len(added) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next := slices.Concat(m.allocs, added)
	if err := writeCheckpoint(m.checkpointPath(), next); err != nil {
		return &AdmissionError{Message: fmt.Sprintf("Allocate failed: %v", err)}
	}
	m.allocs = next
	klog.InfoS("Devices allocated", "pod", klog.KObj(p), "allocations", added)
	return nil
}

// allocate picks n devices of name for one container: nil when the
// container already holds them. reusable are devices of this pod's init
// containers it may take first; pending are this admission's picks so far.
func (m *Manager) allocate(ctx context.Context, uid types.UID, container, name string, n int, reusable []string, pending []Allocation) ([]string, error) {
	m.mu.Lock()
	for _, a := range m.allocs {
		if a.PodUID == uid && a.Container == container && a.Resource == name {
			m.mu.Unlock()
			return nil, nil
		}
	}
	r := m.resources[name]
	if r == nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: 0", name, n)
	}
	free := Free(keys(r.healthy), m.allocatedLocked(name, pending))
	free = slices.Compact(slices.Sorted(slices.Values(slices.Concat(free, reusable))))
	ep := r.ep
	m.mu.Unlock()
	if n > len(free) {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", name, n, len(free))
	}
	// Reused init container devices first, as upstream.
	preferred := slices.Clone(reusable)
	if ep != nil && ep.options.GetGetPreferredAllocationAvailable() && len(preferred) < n {
		pctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		resp, err := ep.client.GetPreferredAllocation(pctx, &pluginapi.PreferredAllocationRequest{
			ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: free, MustIncludeDeviceIDs: reusable, AllocationSize: int32(n),
			}},
		})
		cancel()
		if err != nil {
			klog.ErrorS(err, "GetPreferredAllocation: choosing devices without the plugin's preference", "resource", name)
		} else if rs := resp.GetContainerResponses(); len(rs) > 0 {
			preferred = append(preferred, rs[0].GetDeviceIDs()...)
		}
	}
	return Pick(name, free, n, preferred)
}

// allocatedLocked are the devices of resource name held by containers,
// plus pending.
func (m *Manager) allocatedLocked(name string, pending []Allocation) map[string]bool {
	out := map[string]bool{}
	for _, a := range slices.Concat(m.allocs, pending) {
		if a.Resource != name {
			continue
		}
		for _, d := range a.Devices {
			out[d] = true
		}
	}
	return out
}

// Release frees the devices of pods not wanted any more (their containers
// are gone, as housekeeping decides).
func (m *Manager) Release(wanted func(types.UID) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := slices.DeleteFunc(slices.Clone(m.allocs), func(a Allocation) bool { return !wanted(a.PodUID) })
	if len(next) == len(m.allocs) {
		return nil
	}
	if err := writeCheckpoint(m.checkpointPath(), next); err != nil {
		return err
	}
	klog.InfoS("Devices released", "allocations", len(m.allocs)-len(next))
	m.allocs = next
	return nil
}

// ReleasePod frees the devices of one pod (refused after its devices were
// reserved).
func (m *Manager) ReleasePod(uid types.UID) error {
	return m.Release(func(u types.UID) bool { return u != uid })
}

// Allocations are the devices held now (a copy).
func (m *Manager) Allocations() []Allocation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.allocs)
}

// Apply asks the plugins to allocate the devices c of p holds (and to
// prepare them, PreStartContainer, where their options ask) and applies
// their answer to the container's CRI config. A container holding no
// devices is left as it is.
func (m *Manager) Apply(ctx context.Context, p *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	m.mu.Lock()
	type call struct {
		name string
		devs []string
		ep   *endpoint
	}
	var calls []call
	for _, a := range m.allocs {
		if a.PodUID != p.UID || a.Container != c.Name {
			continue
		}
		var ep *endpoint
		if r := m.resources[a.Resource]; r != nil {
			ep = r.ep
		}
		calls = append(calls, call{a.Resource, a.Devices, ep})
	}
	m.mu.Unlock()
	for _, cl := range calls {
		if cl.ep == nil {
			return fmt.Errorf("device plugin for %s is not registered: cannot allocate devices %v", cl.name, cl.devs)
		}
		actx, cancel := context.WithTimeout(ctx, rpcTimeout)
		resp, err := cl.ep.client.Allocate(actx, &pluginapi.AllocateRequest{
			ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: cl.devs}},
		})
		cancel()
		if err != nil {
			return fmt.Errorf("device plugin %s: Allocate %v: %w", cl.name, cl.devs, err)
		}
		rs := resp.GetContainerResponses()
		if len(rs) != 1 {
			return fmt.Errorf("device plugin %s: Allocate answered %d container responses for 1 request", cl.name, len(rs))
		}
		ApplyResponse(cfg, rs[0])
		if cl.ep.options.GetPreStartRequired() {
			pctx, cancel := context.WithTimeout(ctx, pluginapi.KubeletPreStartContainerRPCTimeoutInSecs*1e9)
			_, err := cl.ep.client.PreStartContainer(pctx, &pluginapi.PreStartContainerRequest{DevicesIds: cl.devs})
			cancel()
			if err != nil {
				return fmt.Errorf("device plugin %s: PreStartContainer %v: %w", cl.name, cl.devs, err)
			}
		}
	}
	return nil
}
