package node

import (
	"context"
	"fmt"
	"slices"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Runtime is what HostFacts asks the container runtime; *cri.Client has
// these methods.
type Runtime interface {
	Version(ctx context.Context) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// HostConfig says where HostFacts looks.
type HostConfig struct {
	// Runtime is the CRI runtime; nil reports the runtime as down.
	Runtime Runtime
	// RootDir is nodelet's root dir: its filesystem is ephemeral-storage.
	RootDir string
	// DiskPressure reports image filesystem pressure (image GC); nil: none.
	DiskPressure func() bool
	// RuntimeHealthy reports a runtime that stopped answering relists
	// (PLEG); nil: healthy.
	RuntimeHealthy func() error
	// ShuttingDown reports a node shutdown under way (graceful node
	// shutdown): the node is then not ready, as upstream; nil: never.
	ShuttingDown func() bool
	// Root prefixes the /proc, /sys and /etc paths read; "" is /. For tests.
	Root string
}

// HostFacts is the FactSource of the real machine. It logs what it cannot
// read once per distinct error, not every pass.
type HostFacts struct {
	cfg   HostConfig
	paths hostPaths

	static Machine // read once: it does not change while the machine is up

	mu     sync.Mutex
	logged map[string]string // what -> last error logged
}

// NewHostFacts reads what does not change (kernel, OS image, machine and
// boot IDs) now, and the rest on every Facts call.
func NewHostFacts(cfg HostConfig) *HostFacts {
	h := &HostFacts{cfg: cfg, paths: hostPaths{root: cfg.Root}, logged: map[string]string{}}
	var err error
	if h.static.KernelVersion, err = kernelVersion(); err != nil {
		h.report("kernel version", err)
	}
	if h.static.OSImage, err = h.paths.osImage(); err != nil {
		h.report("OS image", err)
	}
	if h.static.MachineID, err = h.paths.firstOf("/etc/machine-id", "/var/lib/dbus/machine-id"); err != nil {
		h.report("machine ID", err)
	}
	if h.static.SystemUUID, err = h.paths.firstOf("/sys/class/dmi/id/product_uuid", "/proc/device-tree/system-id", "/proc/device-tree/vm,uuid"); err != nil {
		h.report("system UUID", err)
	}
	if h.static.BootID, err = h.paths.readString("/proc/sys/kernel/random/boot_id"); err != nil {
		h.report("boot ID", err)
	}
	return h
}

// report logs err about what unless it is the error logged last time.
func (h *HostFacts) report(what string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.logged, what)
		return
	}
	if h.logged[what] == err.Error() {
		return
	}
	h.logged[what] = err.Error()
	klog.InfoS("Cannot read a node fact, reporting it as unknown", "fact", what, "err", err)
}

// Facts observes the machine and the runtime now.
func (h *HostFacts) Facts(ctx context.Context) Facts {
	f := Facts{Machine: h.static, MemoryAvailable: -1}
	var err error
	f.Machine.CPUs, err = h.paths.cpus()
	h.report("CPUs", err)
	var total int64
	total, f.MemoryAvailable, err = h.paths.meminfo()
	h.report("memory", err)
	if err == nil {
		f.Machine.MemoryBytes = total
	} else {
		f.MemoryAvailable = -1
	}
	f.Machine.HugePages, err = h.paths.hugePages()
	h.report("huge pages", err)
	if h.cfg.RootDir != "" {
		f.Machine.EphemeralStorageBytes, err = fsCapacity(h.cfg.RootDir)
		h.report("ephemeral storage", err)
	}
	f.PIDsInUse, f.PIDsMax, err = h.paths.pids()
	h.report("PIDs", err)
	if h.cfg.DiskPressure != nil {
		f.DiskPressure = h.cfg.DiskPressure()
	}

	var healthErr error
	if h.cfg.RuntimeHealthy != nil {
		healthErr = h.cfg.RuntimeHealthy()
	}
	if h.cfg.Runtime == nil {
		f.RuntimeErrors = RuntimeErrors(nil, fmt.Errorf("no container runtime"), healthErr)
		return f
	}
	status, statusErr := h.cfg.Runtime.Status(ctx, false)
	f.RuntimeErrors = RuntimeErrors(status, statusErr, healthErr)
	if h.cfg.ShuttingDown != nil && h.cfg.ShuttingDown() {
		f.RuntimeErrors = append(f.RuntimeErrors, ShuttingDownMessage)
	}
	if v, err := h.cfg.Runtime.Version(ctx); err == nil && v.GetRuntimeName() != "" {
		f.RuntimeVersion = v.GetRuntimeName() + "://" + v.GetRuntimeVersion()
	} else {
		h.report("runtime version", err)
	}
	imgs, err := h.cfg.Runtime.ListImages(ctx, nil)
	h.report("images", err)
	if err == nil {
		f.Images = NodeImages(runtimeImages(imgs))
	}
	return f
}

func runtimeImages(imgs []*runtimeapi.Image) []RuntimeImage {
	out := make([]RuntimeImage, 0, len(imgs))
	for _, img := range imgs {
		// Digests first, as upstream: they identify the image exactly.
		names := slices.Concat(img.GetRepoDigests(), img.GetRepoTags())
		out = append(out, RuntimeImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}

// ShuttingDownMessage is the NotReady reason of a node shutting down,
// upstream's words.
const ShuttingDownMessage = "node is shutting down"

// RuntimeErrors says why the runtime cannot run pods, from its CRI status
// (statusErr when that call failed) and the relist health (healthErr). The
// messages are upstream's, so they read the same in kubectl describe node.
func RuntimeErrors(status *runtimeapi.StatusResponse, statusErr, healthErr error) []string {
	var errs []string
	if healthErr != nil {
		errs = append(errs, fmt.Sprintf("PLEG is not healthy: %v", healthErr))
	}
	if statusErr != nil {
		return append(errs, fmt.Sprintf("container runtime is down: %v", statusErr))
	}
	conds := status.GetStatus().GetConditions()
	for _, want := range []struct{ cond, msg string }{
		{runtimeapi.RuntimeReady, "container runtime not ready"},
		{runtimeapi.NetworkReady, "container runtime network not ready"},
	} {
		i := slices.IndexFunc(conds, func(c *runtimeapi.RuntimeCondition) bool { return c.GetType() == want.cond })
		switch {
		case i < 0:
			errs = append(errs, fmt.Sprintf("%s: %s condition not reported", want.msg, want.cond))
		case !conds[i].GetStatus():
			errs = append(errs, fmt.Sprintf("%s: %s=false reason:%s message:%s", want.msg, want.cond, conds[i].GetReason(), conds[i].GetMessage()))
		}
	}
	return errs
}

var _ FactSource = (*HostFacts)(nil)
