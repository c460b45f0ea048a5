package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/status"
)

// Config configures a Manager: the settings of the same names.
type Config struct {
	// Driver is --cgroup-driver: DriverCgroupfs or DriverSystemd.
	Driver string
	// Root is --cgroup-root; "" is "/".
	Root string
	// PodPidsLimit is --pod-max-pids: > 0 limits each pod's tasks.
	PodPidsLimit int64
	// FS is where the cgroup filesystems are mounted; "" is DefaultFS.
	FS string
	// Observe, when set, is told how long each cgroup operation took:
	// op is upstream's operation_type ("create", "update", "destroy").
	Observe func(op string, began time.Time)
}

// observe reports an operation that began at began, if anyone listens.
func (m *Manager) observe(op string, began time.Time) {
	if m.cfg.Observe != nil {
		m.cfg.Observe(op, began)
	}
}

// Manager makes and removes the node's pod cgroups (see the package doc).
// It is safe for concurrent use by the pod workers.
type Manager struct {
	cfg   Config
	root  Name
	mode  Mode
	hiers []hierarchy

	mu sync.Mutex
	// pods are the pod cgroups made since start (or learnt from the pods
	// adopted), with what was written, so that making one again for each
	// sync of a running pod costs nothing.
	pods map[types.UID]podCgroup
	// burstableShares is what the burstable cgroup's cpu.shares was last
	// set to.
	burstableShares uint64
}

type podCgroup struct {
	qos    v1.PodQOSClass
	limits Limits
	// cpuRequest is the pod's CPU request (millicores), counted in the
	// burstable cgroup's shares for Burstable pods.
	cpuRequest int64
}

// New checks that the host can do what cfg asks and makes the QoS
// cgroups. What it cannot do (the systemd driver, a controller missing, a
// cgroup root that does not exist) is an error saying so: nodelet then
// refuses to start rather than run pods without their limits.
func New(cfg Config) (*Manager, error) {
	if cfg.FS == "" {
		cfg.FS = DefaultFS
	}
	switch cfg.Driver {
	case DriverCgroupfs:
	case DriverSystemd:
		if !systemdRunning() {
			return nil, errors.New("--cgroup-driver=systemd needs systemd as the init system, and it is not running here (no /run/systemd/system): use --cgroup-driver=cgroupfs, and configure the runtime to match")
		}
		return nil, errors.New("--cgroup-driver=systemd is not supported by nodelet yet (pod slices would have to be made through systemd's D-Bus API): use --cgroup-driver=cgroupfs, and configure the runtime to match")
	default:
		return nil, fmt.Errorf("--cgroup-driver=%q: must be %s or %s", cfg.Driver, DriverCgroupfs, DriverSystemd)
	}
	root, err := ParseRoot(cfg.Driver, cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("--cgroup-root: %w", err)
	}
	mode, hiers, err := detect(cfg.FS)
	if err != nil {
		return nil, err
	}
	want := []string{ControllerCPU, ControllerMemory}
	if cfg.PodPidsLimit > 0 {
		want = append(want, ControllerPids)
	}
	if missing := missingControllers(hiers, want...); len(missing) > 0 {
		return nil, fmt.Errorf("cgroup controllers %v are not available (cgroup %s under %s): pod limits cannot be enforced", missing, mode, cfg.FS)
	}
	// As upstream: the root is the operator's to make; a typo must not
	// create a tree somewhere unexpected.
	for _, h := range hiers {
		if _, err := os.Stat(filepath.Join(h.dir, CgroupfsPath(root))); err != nil {
			return nil, fmt.Errorf("--cgroup-root %q does not exist in %s: %w", cfg.Root, h.dir, err)
		}
	}
	m, err := newManager(cfg, root, mode, hiers)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Pod cgroups", "mode", mode, "driver", cfg.Driver, "kubepods", m.parent(PodsName(root)), "podPidsLimit", cfg.PodPidsLimit)
	return m, nil
}

// newManager is New on hierarchies found (or, in tests, made up) and
// checked: it makes the QoS cgroups.
func newManager(cfg Config, root Name, mode Mode, hiers []hierarchy) (*Manager, error) {
	m := &Manager{cfg: cfg, root: root, mode: mode, hiers: hiers, pods: map[types.UID]podCgroup{}}
	if err := m.ensureQOS(); err != nil {
		return nil, err
	}
	return m, nil
}

// Mode is the host's cgroup mode.
func (m *Manager) Mode() Mode { return m.mode }

func (m *Manager) files(l Limits) []File {
	if m.mode == ModeV2 {
		return FilesV2(l)
	}
	return FilesV1(l)
}

// parent is the driver's name of n, the runtime's CgroupParent.
func (m *Manager) parent(n Name) string { return DriverPath(m.cfg.Driver, n) }

// ensureQOS makes kubepods, burstable and besteffort in every hierarchy;
// besteffort gets the minimum CPU shares, burstable its pods' requests
// (none yet). Node allocatable goes on kubepods with EnforceKubepods.
func (m *Manager) ensureQOS() error {
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.mkdir(CgroupfsPath(QOSName(m.root, qos))); err != nil {
			return err
		}
	}
	min := uint64(MinShares)
	if err := writeFiles(m.hiers, CgroupfsPath(QOSName(m.root, v1.PodQOSBestEffort)), m.files(Limits{CPUShares: &min})); err != nil {
		return err
	}
	return m.setBurstableShares(MinShares)
}

func (m *Manager) mkdir(rel string) error {
	for _, h := range m.hiers {
		if err := mkdirCgroup(h, rel); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) setBurstableShares(shares uint64) error {
	defer m.observe("update", time.Now())
	if err := writeFiles(m.hiers, CgroupfsPath(QOSName(m.root, v1.PodQOSBurstable)), m.files(Limits{CPUShares: &shares})); err != nil {
		return err
	}
	m.burstableShares = shares
	return nil
}

// updateBurstableLocked sets the burstable cgroup's shares to its pods'
// requests when they changed.
func (m *Manager) updateBurstableLocked() error {
	var reqs []int64
	for _, p := range m.pods {
		if p.qos == v1.PodQOSBurstable {
			reqs = append(reqs, p.cpuRequest)
		}
	}
	if s := BurstableShares(reqs); s != m.burstableShares {
		return m.setBurstableShares(s)
	}
	return nil
}

// EnsurePod makes pod's cgroup with its limits, if it is not made as they
// are, and returns it as the runtime's CgroupParent.
func (m *Manager) EnsurePod(pod *v1.Pod) (string, error) {
	qos := status.QOSClass(pod)
	name := PodName(m.root, qos, pod.UID)
	want := podCgroup{qos: qos, limits: PodLimits(pod, m.cfg.PodPidsLimit), cpuRequest: PodCPURequest(pod)}
	rel := CgroupfsPath(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	have, known := m.pods[pod.UID]
	exists := m.exists(rel)
	if known && reflect.DeepEqual(have, want) && exists {
		return m.parent(name), nil
	}
	op := "create"
	if exists {
		op = "update"
	}
	began := time.Now()
	if err := m.mkdir(rel); err != nil {
		return "", fmt.Errorf("pod cgroup: %w", err)
	}
	if err := writeFiles(m.hiers, rel, m.files(want.limits)); err != nil {
		return "", fmt.Errorf("pod cgroup limits: %w", err)
	}
	m.observe(op, began)
	m.pods[pod.UID] = want
	if err := m.updateBurstableLocked(); err != nil {
		return "", fmt.Errorf("burstable cgroup: %w", err)
	}
	return m.parent(name), nil
}

// exists: rel is there in the first hierarchy (they are made together).
func (m *Manager) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(m.hiers[0].dir, rel))
	return err == nil
}

// RemovePod removes the cgroup of pod uid, whatever its class, in every
// hierarchy. The pod's containers must be gone: a cgroup with tasks left
// is not removed (EBUSY) and the error says so.
func (m *Manager) RemovePod(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removePodLocked(uid)
}

func (m *Manager) removePodLocked(uid types.UID) error {
	began := time.Now()
	var errs []error
	for _, dir := range m.podDirs(uid) {
		errs = append(errs, removeCgroup(dir))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.observe("destroy", began)
	delete(m.pods, uid)
	return m.updateBurstableLocked()
}

// podDirs are where a cgroup of pod uid can be, in every hierarchy.
func (m *Manager) podDirs(uid types.UID) []string {
	var out []string
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		rel := CgroupfsPath(PodName(m.root, qos, uid))
		for _, h := range m.hiers {
			out = append(out, filepath.Join(h.dir, rel))
		}
	}
	return out
}

// PodUIDs lists the pods that have a cgroup, in any hierarchy.
func (m *Manager) PodUIDs() map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		rel := CgroupfsPath(QOSName(m.root, qos))
		for _, h := range m.hiers {
			entries, _ := os.ReadDir(filepath.Join(h.dir, rel))
			for _, e := range entries {
				if uid, ok := PodUIDFromName(e.Name()); ok && e.IsDir() {
					out[uid] = true
				}
			}
		}
	}
	return out
}

// RemoveOrphans removes the cgroups of pods for which keep is false (no
// longer wanted, nothing of them in the runtime): leftovers of pods
// removed while nodelet was down or whose removal failed. Processes still
// in them (a runtime that lost track of them) are killed first, as
// upstream does. keep is asked with the pods' cgroups locked, so a pod
// wanted again meanwhile is either kept or made anew after the removal.
// Failures are retried at the next call.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) error {
	var errs []error
	for uid := range m.PodUIDs() {
		if err := m.removeOrphan(uid, keep); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) removeOrphan(uid types.UID, keep func(types.UID) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keep(uid) {
		return nil
	}
	err := m.removePodLocked(uid)
	if err != nil {
		killed := 0
		for _, dir := range m.podDirs(uid) {
			killed += killTasks(dir)
		}
		if killed == 0 {
			return err
		}
		klog.InfoS("Killed processes left in the cgroup of a removed pod", "podUID", uid, "processes", killed)
		// SIGKILLed tasks leave their cgroup as they exit, within moments:
		// one more try now, else at the next pass.
		time.Sleep(200 * time.Millisecond)
		if err = m.removePodLocked(uid); err != nil {
			return err
		}
	}
	klog.InfoS("Removed the cgroup of a pod no longer on the node", "podUID", uid)
	return nil
}
