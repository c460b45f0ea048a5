package cristatus

import (
	"errors"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// The relist converts the full listing every second, and on an idle node it
// is the same listing each time. cri.Client hands out the same decoded
// message for an entry whose bytes did not change (its list cache), so the
// message's pointer is a key that changes whenever the entry does: an
// entry's identity is parsed once, and a pod whose entries are all the
// entries it had in the previous listing is the pod converted then. Keying
// on pointers relies on what cri.Client already requires: nobody modifies a
// listed message.

// PodsCache is Pods for repeated listings: it converts only the sandboxes
// and containers that were not in the previous listing, and returns the
// *runtime.Pod of the previous listing for a pod none of whose entries
// changed. The pods it returns are shared between listings and callers and
// must not be modified. Safe for concurrent use; the zero value is ready.
type PodsCache struct {
	mu sync.Mutex
	// The previous listing: its entries, converted, and its pods by UID.
	sandboxes  map[*runtimeapi.PodSandbox]sandboxItem
	containers map[*runtimeapi.Container]containerItem
	pods       map[types.UID]*cachedPod
	// last is the previous result, returned as is when the listing is
	// entry for entry the previous one.
	last     []*runtime.Pod
	lastSbs  []*runtimeapi.PodSandbox
	lastCtrs []*runtimeapi.Container
	// converted and podsBuilt count entries converted and pods built.
	converted, podsBuilt int
}

// sandboxItem is one listed sandbox, converted; managed is false for a
// sandbox without kubelet identity (left out).
type sandboxItem struct {
	managed bool
	uid     types.UID
	name    string
	ns      string
	source  string
	ref     runtime.SandboxRef
}

type containerItem struct {
	managed bool
	uid     types.UID
	name    string
	ns      string
	ref     runtime.ContainerRef
}

// cachedPod is a pod of the previous listing with the entries it was
// built from, in listing order.
type cachedPod struct {
	pod  *runtime.Pod
	sbs  []*runtimeapi.PodSandbox
	ctrs []*runtimeapi.Container
}

// Stats reports how many entries (sandboxes and containers) and how many
// pods the cache has converted since it was made: an unchanged listing adds
// nothing to either.
func (c *PodsCache) Stats() (entries, pods int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.converted, c.podsBuilt
}

// Pods is Pods(s), converting only what changed since the previous call.
func (c *PodsCache) Pods(s *cri.PodState) []*runtime.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && slices.Equal(s.Sandboxes, c.lastSbs) && slices.Equal(s.Containers, c.lastCtrs) {
		return c.last
	}

	sandboxes := make(map[*runtimeapi.PodSandbox]sandboxItem, len(s.Sandboxes))
	containers := make(map[*runtimeapi.Container]containerItem, len(s.Containers))
	// Group the entries by pod, keeping the listing's order of pods (first
	// seen) and of entries within a pod, as Pods does.
	type group struct {
		sbs  []*runtimeapi.PodSandbox
		ctrs []*runtimeapi.Container
	}
	groups := map[types.UID]*group{}
	var order []types.UID
	groupOf := func(uid types.UID) *group {
		g, ok := groups[uid]
		if !ok {
			g = &group{}
			groups[uid] = g
			order = append(order, uid)
		}
		return g
	}
	for _, sb := range s.Sandboxes {
		it, ok := c.sandboxes[sb]
		if !ok {
			it = convertSandbox(sb)
			c.converted++
		}
		sandboxes[sb] = it
		if it.managed {
			g := groupOf(it.uid)
			g.sbs = append(g.sbs, sb)
		}
	}
	for _, ctr := range s.Containers {
		it, ok := c.containers[ctr]
		if !ok {
			it = convertContainer(ctr)
			c.converted++
		}
		containers[ctr] = it
		if it.managed {
			g := groupOf(it.uid)
			g.ctrs = append(g.ctrs, ctr)
		}
	}

	pods := make(map[types.UID]*cachedPod, len(order))
	out := make([]*runtime.Pod, 0, len(order))
	for _, uid := range order {
		g := groups[uid]
		cp, ok := c.pods[uid]
		if !ok || !slices.Equal(cp.sbs, g.sbs) || !slices.Equal(cp.ctrs, g.ctrs) {
			cp = &cachedPod{pod: buildPod(g.sbs, g.ctrs, sandboxes, containers), sbs: g.sbs, ctrs: g.ctrs}
			c.podsBuilt++
		}
		pods[uid] = cp
		out = append(out, cp.pod)
	}
	c.sandboxes, c.containers, c.pods = sandboxes, containers, pods
	c.last, c.lastSbs, c.lastCtrs = out, slices.Clone(s.Sandboxes), slices.Clone(s.Containers)
	return out
}

// buildPod makes the runtime.Pod of one pod's converted entries (at least
// one; all with the same pod UID), as Pods does.
func buildPod(sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container,
	sandboxes map[*runtimeapi.PodSandbox]sandboxItem, containers map[*runtimeapi.Container]containerItem) *runtime.Pod {
	p := &runtime.Pod{}
	named := false
	for _, sb := range sbs {
		it := sandboxes[sb]
		if !named {
			p.UID, p.Name, p.Namespace, named = it.uid, it.name, it.ns, true
		}
		if p.Source == "" {
			p.Source = it.source
		}
		p.Sandboxes = append(p.Sandboxes, it.ref)
	}
	for _, ctr := range ctrs {
		it := containers[ctr]
		if !named {
			p.UID, p.Name, p.Namespace, named = it.uid, it.name, it.ns, true
		}
		p.Containers = append(p.Containers, it.ref)
	}
	return p
}

func convertSandbox(sb *runtimeapi.PodSandbox) sandboxItem {
	id, err := cri.ParseSandboxIdentity(sb.Labels, sb.Annotations)
	if errors.Is(err, cri.ErrNotManaged) {
		return sandboxItem{}
	}
	return sandboxItem{
		managed: true, uid: id.PodUID, name: id.PodName, ns: id.PodNamespace,
		// Sandboxes carry the pod's annotations, config.source among them.
		source: sb.Annotations[podutil.ConfigSourceAnnotationKey],
		ref: runtime.SandboxRef{
			ID:        sb.Id,
			State:     SandboxState(sb.State),
			Attempt:   sb.GetMetadata().GetAttempt(),
			CreatedAt: TimeFromUnixNano(sb.CreatedAt),
		},
	}
}

func convertContainer(ctr *runtimeapi.Container) containerItem {
	id, err := cri.ParseContainerIdentity(ctr.Labels, ctr.Annotations)
	if errors.Is(err, cri.ErrNotManaged) {
		return containerItem{}
	}
	return containerItem{
		managed: true, uid: id.PodUID, name: id.PodName, ns: id.PodNamespace,
		ref: runtime.ContainerRef{
			ID:        ctr.Id,
			Name:      id.ContainerName,
			State:     ContainerState(ctr.State),
			SandboxID: ctr.PodSandboxId,
			CreatedAt: TimeFromUnixNano(ctr.CreatedAt),
		},
	}
}
