package agent

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/worker"
)

// Graceful node shutdown: package shutdown decides which pods stop when and
// with what grace; the agent stops them on their own workers, so a stop
// never races a sync of the same pod, and marks their statuses as the
// shutdown says (Failed, reason Terminated).

// shutdownStop is one pod stopped for a node shutdown.
type shutdownStop struct {
	// why the pod stops, for the log: "node shutdown" or "preemption".
	why   string
	grace int64
	mark  func(*v1.PodStatus)
	done  chan struct{}
	// closed: done was closed (the pod stopped).
	closed bool
}

// shutdownStops are the pods stopped for a node shutdown. A pod in it stays
// stopped for as long as this nodelet runs: the node is going down.
type shutdownStops struct {
	mu sync.Mutex
	m  map[types.UID]*shutdownStop
}

func (s *shutdownStops) get(uid types.UID) *shutdownStop {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[uid]
}

// add records a stop of uid, or returns the one already recorded.
func (s *shutdownStops) add(uid types.UID, why string, grace int64, mark func(*v1.PodStatus)) *shutdownStop {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[uid]; ok {
		return st
	}
	if s.m == nil {
		s.m = map[types.UID]*shutdownStop{}
	}
	st := &shutdownStop{why: why, grace: grace, mark: mark, done: make(chan struct{})}
	s.m[uid] = st
	return st
}

// isStopped: uid was stopped for a shutdown and has stopped.
func (s *shutdownStops) isStopped(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[uid]
	return ok && st.closed
}

// stopped closes the stop's done channel, once.
func (s *shutdownStops) stopped(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[uid]; ok && !st.closed {
		st.closed = true
		close(st.done)
	}
}

// ActivePods lists the pods that run or are to run: every pod of the node
// whose last status is not final (Succeeded or Failed) and that is not
// already stopped for a shutdown.
func (a *Agent) ActivePods() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range a.pods.Pods() {
		if st, ok := a.statuses.Get(p.UID); ok && (st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed) {
			continue
		}
		if a.shutdowns.isStopped(p.UID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// StopForShutdown stops p's containers with gracePeriod seconds on the
// pod's worker and gives its status what mark sets; the pod is not started
// again. It does not wait: the channel is closed once the pod has stopped.
func (a *Agent) StopForShutdown(p *v1.Pod, gracePeriod int64, mark func(*v1.PodStatus)) <-chan struct{} {
	st := a.shutdowns.add(p.UID, "node shutdown", gracePeriod, mark)
	a.wakeups.Resync(p.UID)
	return st.done
}

// syncShutdown is the sync of a pod stopped for a node shutdown: kill what
// runs, publish the marked status, report the stop.
func (a *Agent) syncShutdown(ctx context.Context, w worker.Work, rs *runtime.PodStatus, s *shutdownStop) worker.Result {
	p := w.Pod
	klog.V(2).InfoS("Stopping pod", "why", s.why, "pod", klog.KObj(p), "gracePeriod", s.grace)
	grace := s.grace
	// Always stopped again: the shutdown's grace period is its own.
	stopped, err := a.stopPod(ctx, p, rs, &grace, "")
	if err != nil {
		return worker.Result{Err: fmt.Errorf("stop pod %s/%s for %s: %w", p.Namespace, p.Name, s.why, err)}
	}
	a.refreshStatus(ctx, w, nil, stopped)
	a.shutdowns.stopped(p.UID)
	return worker.Result{}
}
