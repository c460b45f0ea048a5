package stats

import (
	"context"
	"strings"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Detail is the full summary with what cAdvisor-style consumers
// (/metrics/cadvisor) need beside it: which runtime container each
// summary entry was measured from, its image and cgroup, the figures only
// the cgroup files give, and the machine's capacity.
type Detail struct {
	Summary *statsapi.Summary
	// Containers has one entry per container of the summary.
	Containers map[ContainerKey]ContainerDetail
	// PodPackets has each pod's interfaces' packet counters, by pod UID,
	// when its network was read from its network namespace.
	PodPackets map[string][]InterfacePackets
	// ImageFsDevice is the device holding the runtime's image file system,
	// where containers' writable layers live; "" when unknown.
	ImageFsDevice string
	// Machine is the machine's capacity; MachineErr says why it is
	// missing.
	Machine    MachineInfo
	MachineErr error

	images *imageLookup
}

// imageLookup lists the runtime's images at most once per Detailed call.
type imageLookup struct {
	listed bool
}

// ContainerKey names a container of the summary: its pod's UID and its
// name.
type ContainerKey struct {
	PodUID, Name string
}

// ContainerDetail is one running container as the runtime knows it.
type ContainerDetail struct {
	// ID is the runtime's container ID.
	ID string
	// Image is the image as the pod spec names it when the runtime
	// kept that (CRI ImageSpec.UserSpecifiedImage), else the runtime's
	// image reference.
	Image string
	// CgroupPath is the container's cgroups path ("" when the runtime
	// did not say); Cgroup its figures (nil when unreadable).
	CgroupPath string
	Cgroup     *CgroupStats
}

// Detailed returns the full summary (file systems and network included)
// and its Detail. It costs the summary plus, per container, a few cgroup
// file reads; a container's cgroups path is asked of the runtime once.
func (p *Provider) Detailed(ctx context.Context) (*Detail, error) {
	d := &Detail{Containers: map[ContainerKey]ContainerDetail{}, PodPackets: map[string][]InterfacePackets{}, images: &imageLookup{}}
	s, err := p.summary(ctx, false, d)
	if err != nil {
		return nil, err
	}
	d.Summary = s
	d.Machine, d.MachineErr = p.machine.get(func() (MachineInfo, error) {
		return p.host.machineInfo(p.cfg.SysRoot, p.cfg.EtcRoot)
	})
	return d, nil
}

func (p *Provider) containerDetail(ctx context.Context, c *runtimeapi.Container, d *Detail) ContainerDetail {
	cd := ContainerDetail{ID: c.Id, Image: c.GetImage().GetUserSpecifiedImage()}
	if cd.Image == "" {
		cd.Image = p.imageName(ctx, c.GetImage().GetImage(), d.images)
	}
	path, ok := p.cgroupPaths.get(c.Id)
	if !ok {
		var err error
		if path, err = p.cfg.Runtime.ContainerCgroup(ctx, c.Id); err != nil {
			klog.V(3).InfoS("Stats: container cgroup", "container", c.Id, "err", err)
			return cd
		}
		p.cgroupPaths.put(c.Id, path)
	}
	cd.CgroupPath = path
	cs, err := p.cgroups.read(path)
	if err != nil {
		klog.V(3).InfoS("Stats: container cgroup", "container", c.Id, "cgroup", path, "err", err)
		return cd
	}
	cd.Cgroup = cs
	return cd
}

// imageName names an image the way the runtime's container status does
// (containerd: the image's first repo tag), since cAdvisor's image label is
// that name. The runtime lists containers with the image reference nodelet
// created them with, an image ID; IDs are resolved through ListImages,
// cached. A reference that is not an ID, or an ID with no tag, stays as it
// is.
func (p *Provider) imageName(ctx context.Context, ref string, l *imageLookup) string {
	if !strings.HasPrefix(ref, "sha256:") {
		return ref
	}
	if name, ok := p.imageNames.get(ref); ok {
		return name
	}
	if l.listed {
		return ref
	}
	l.listed = true
	images, err := p.cfg.Runtime.ListImages(ctx, nil)
	if err != nil {
		klog.V(3).InfoS("Stats: listing images", "err", err)
		return ref
	}
	for _, img := range images {
		if len(img.RepoTags) > 0 {
			p.imageNames.put(img.Id, img.RepoTags[0])
		}
	}
	if name, ok := p.imageNames.get(ref); ok {
		return name
	}
	return ref
}

// fsDevice returns the device of the file system holding path, cached.
func (p *Provider) fsDevice(path string) string {
	if path == "" {
		return ""
	}
	if dev, ok := p.fsDevices.get(path); ok {
		return dev
	}
	dev := mountDevice(p.cfg.ProcRoot, path)
	p.fsDevices.put(path, dev)
	return dev
}

// idCache is a bounded map of values that never change for their key
// (a container's cgroup path, a mountpoint's device). When full it starts
// over: keys come and go with containers, and a miss only costs a lookup.
type idCache[V any] struct {
	mu    sync.Mutex
	max   int
	items map[string]V
}

func newIDCache[V any](max int) *idCache[V] {
	return &idCache[V]{max: max, items: map[string]V{}}
}

func (c *idCache[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.items[k]
	return v, ok
}

func (c *idCache[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) >= c.max {
		c.items = map[string]V{}
	}
	c.items[k] = v
}

// onceValue computes a value on first success and keeps it; a failure is
// retried on the next call.
type onceValue[V any] struct {
	mu   sync.Mutex
	done bool
	v    V
}

func (o *onceValue[V]) get(f func() (V, error)) (V, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return o.v, nil
	}
	v, err := f()
	if err != nil {
		return v, err
	}
	o.v, o.done = v, true
	return v, nil
}
