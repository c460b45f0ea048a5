package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// DefaultDropInDir is where logind reads drop-in configuration; the
// Manager writes DropInName there when logind's delay is too short.
const (
	DefaultDropInDir = "/etc/systemd/logind.conf.d"
	DropInName       = "99-nodelet.conf"
)

// Pods is what the Manager needs of the node's pods.
type Pods interface {
	// Active lists the pods that run or are to run.
	Active() []*v1.Pod
	// Kill asks for a pod to be stopped with the given grace period and
	// its status marked with mark. It does not wait: the returned channel
	// is closed once the pod has stopped.
	Kill(p *v1.Pod, gracePeriod int64, mark func(*v1.PodStatus)) <-chan struct{}
}

// Node is the node the Manager reports the shutdown on.
type Node interface {
	// ShuttingDown marks the node not ready while the shutdown runs
	// (true), and ready again when it was cancelled (false).
	ShuttingDown(bool)
}

// Config is the graceful shutdown settings.
type Config struct {
	// GracePeriod is shutdownGracePeriod: how long the whole shutdown of
	// the pods may take. Zero disables graceful shutdown.
	GracePeriod time.Duration
	// CriticalGracePeriod is shutdownGracePeriodCriticalPods: the part of
	// GracePeriod kept for critical pods, stopped last.
	CriticalGracePeriod time.Duration
	// DropInDir is logind's drop-in directory (DefaultDropInDir if empty).
	DropInDir string
}

// Manager holds the shutdown delay lock and stops the pods when logind
// announces a shutdown.
type Manager struct {
	cfg    Config
	groups []Group
	logind Logind
	pods   Pods
	node   Node
	now    func() time.Time
}

// NewManager checks the settings; logind is the host's (see DialLogind).
func NewManager(cfg Config, logind Logind, pods Pods, node Node) (*Manager, error) {
	groups, err := Groups(cfg.GracePeriod, cfg.CriticalGracePeriod)
	if err != nil {
		return nil, err
	}
	if groups == nil {
		return nil, errors.New("graceful node shutdown needs a shutdownGracePeriod above zero")
	}
	if cfg.DropInDir == "" {
		cfg.DropInDir = DefaultDropInDir
	}
	return &Manager{cfg: cfg, groups: groups, logind: logind, pods: pods, node: node, now: time.Now}, nil
}

// Run makes sure logind waits long enough, takes the delay lock and
// handles shutdowns until ctx ends. It fails when logind cannot be made to
// wait for the grace period: the operator asked for a graceful shutdown
// nodelet could not give.
func (m *Manager) Run(ctx context.Context) error {
	if err := m.ensureDelay(); err != nil {
		return err
	}
	events, err := m.logind.PrepareForShutdown(ctx)
	if err != nil {
		return err
	}
	lock, err := m.inhibit()
	if err != nil {
		return err
	}
	defer func() {
		if lock != nil {
			lock.Close()
		}
	}()
	klog.InfoS("Graceful node shutdown enabled", "shutdownGracePeriod", m.cfg.GracePeriod, "shutdownGracePeriodCriticalPods", m.cfg.CriticalGracePeriod)
	for {
		select {
		case <-ctx.Done():
			return nil
		case active, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("lost the connection to systemd-logind")
			}
			if !active {
				// The shutdown was cancelled: hold it back again next time.
				klog.InfoS("Node shutdown cancelled")
				m.node.ShuttingDown(false)
				if lock == nil {
					if lock, err = m.inhibit(); err != nil {
						return err
					}
				}
				continue
			}
			if lock == nil {
				continue // already done; logind goes on
			}
			klog.InfoS("Node shutting down: stopping pods", "shutdownGracePeriod", m.cfg.GracePeriod)
			m.node.ShuttingDown(true)
			m.stopPods(ctx)
			klog.InfoS("Pods stopped for node shutdown; releasing the shutdown delay lock")
			if err := lock.Close(); err != nil {
				klog.ErrorS(err, "Release the shutdown delay lock")
			}
			lock = nil
		}
	}
}

func (m *Manager) inhibit() (io.Closer, error) {
	return m.logind.Inhibit("nodelet", "nodelet needs time to stop pods gracefully on node shutdown")
}

// ensureDelay raises logind's InhibitDelayMaxSec to the grace period with
// a drop-in when it is shorter, as upstream does.
func (m *Manager) ensureDelay() error {
	cur, err := m.logind.InhibitDelayMax()
	if err != nil {
		return err
	}
	if cur >= m.cfg.GracePeriod {
		return nil
	}
	if err := writeDropIn(m.cfg.DropInDir, m.cfg.GracePeriod); err != nil {
		return err
	}
	if err := m.logind.ReloadConfig(); err != nil {
		return err
	}
	if cur, err = m.logind.InhibitDelayMax(); err != nil {
		return err
	}
	if cur < m.cfg.GracePeriod {
		return fmt.Errorf("systemd-logind's InhibitDelayMaxSec is %v, less than shutdownGracePeriod %v, even after writing %s",
			cur, m.cfg.GracePeriod, filepath.Join(m.cfg.DropInDir, DropInName))
	}
	return nil
}

func writeDropIn(dir string, grace time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create logind drop-in dir: %w", err)
	}
	secs := int64((grace + time.Second - 1) / time.Second)
	text := fmt.Sprintf("# Written by nodelet so that shutdown waits shutdownGracePeriod for pods to stop.\n[Login]\nInhibitDelayMaxSec=%d\n", secs)
	path := filepath.Join(dir, DropInName)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write logind drop-in: %w", err)
	}
	return nil
}

// stopPods stops the groups in order, lowest priority first. Each group
// gets its grace period: the next group starts when all of its pods
// stopped or the period is over, whichever comes first.
func (m *Manager) stopPods(ctx context.Context) {
	for _, g := range Assign(m.groups, m.pods.Active()) {
		if len(g.Pods) == 0 {
			continue
		}
		// Every kill is asked for before the wait begins, so a group with
		// no time left (a zero critical period) still has its pods killed.
		stopped := make([]<-chan struct{}, 0, len(g.Pods))
		for _, p := range g.Pods {
			grace := PodGrace(p, g.Grace)
			klog.V(1).InfoS("Stopping pod for node shutdown", "pod", klog.KObj(p), "gracePeriod", grace)
			stopped = append(stopped, m.pods.Kill(p, grace, func(st *v1.PodStatus) { MarkTerminated(st, m.now()) }))
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, c := range stopped {
				select {
				case <-c:
				case <-ctx.Done():
					return
				}
			}
		}()
		timer := time.NewTimer(g.Grace)
		select {
		case <-done:
		case <-timer.C:
			klog.InfoS("Pods still stopping at the end of their group's grace period", "minPriority", g.MinPriority, "gracePeriod", g.Grace)
		case <-ctx.Done():
		}
		timer.Stop()
	}
}
