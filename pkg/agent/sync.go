package agent

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/metrics"
	"github.com/nodelet/nodelet/pkg/pleg"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/plan"
	"github.com/nodelet/nodelet/pkg/status"
	"github.com/nodelet/nodelet/pkg/tracing"
	"github.com/nodelet/nodelet/pkg/worker"
)

// syncSpanName names a sync's span as upstream names the kubelet's: a kill
// is the pod's termination.
func syncSpanName(t worker.UpdateType) string {
	if t == worker.Kill {
		return "syncTerminatingPod"
	}
	return "syncPod"
}

// syncPod is the worker.SyncFunc: it runs on the pod's own goroutine.
func (a *Agent) syncPod(ctx context.Context, w worker.Work) (out worker.Result) {
	p := w.Pod
	obs, known := a.observed.get(p.UID)
	if w.Type == worker.Sync && skipRelisted(w.Relisted, obs, known) {
		// Under a burst this is most relist events: the listing shows
		// what the worker itself started and already reported.
		klog.V(4).InfoS("Relisted state already observed; not syncing", "pod", klog.KObj(p))
		return worker.Result{Skipped: true}
	}
	if w.Periodic && w.Type == worker.Sync {
		fp, began, listed := a.relister.Listed(p.UID)
		if skipPeriodic(obs, known, listedState{fingerprint: fp, began: began, ok: listed}) {
			// Nothing to re-read, plan or publish: the relist showed
			// every change of the pod's runtime state, none came since the
			// last sync, which left nothing to do. The timer stays armed.
			// The mirror pod is still synced: this retries one that could
			// not be made.
			klog.V(5).InfoS("Periodic resync of an unchanged pod; not syncing", "pod", klog.KObj(p))
			a.syncMirror(ctx, w)
			return worker.Result{}
		}
	}
	defer metrics.ObservePodWorker(w.Type.String(), time.Now())
	ctx, span := a.tracer.Start(ctx, syncSpanName(w.Type), trace.WithAttributes(
		tracing.PodAttributes(p.Namespace, p.Name, string(p.UID), w.Type.String())...))
	defer func() {
		if out.Err != nil {
			span.RecordError(out.Err)
			span.SetStatus(codes.Error, out.Err.Error())
		}
		span.End()
	}()
	// First, so a runtime slow under load never delays a deleted mirror's
	// return; a failing mirror never holds up the pod itself.
	a.syncMirror(ctx, w)
	defer func() { a.observed.acted(p.UID, time.Now()) }()
	readAt := time.Now()
	var rs *runtime.PodStatus
	if w.Type == worker.Create && a.relister.Absent(p.UID, a.observed.lastActed(p.UID)) {
		// A pod new to the runtime: the relist began after anything this
		// process did for the pod and saw nothing of it, and only this
		// worker creates its sandboxes. Reading its status would cost two
		// list calls, in a burst on every new pod's critical path.
		rs = &runtime.PodStatus{UID: p.UID, Name: p.Name, Namespace: p.Namespace}
	} else {
		var err error
		if rs, err = a.rt.PodStatus(ctx, p.UID, p.Name, p.Namespace); err != nil {
			return worker.Result{Err: fmt.Errorf("runtime status of pod %s/%s: %w", p.Namespace, p.Name, err)}
		}
	}

	if w.Type == worker.Kill {
		if p.DeletionTimestamp != nil && !w.Forget {
			// The pod stops taking traffic now, not once its containers
			// have used up their grace period. Its phase is what runs until
			// they have stopped.
			terminating := w
			terminating.Type = worker.Sync
			a.publishStatus(terminating, rs, nil)
		}
		stopped, err := a.stopPod(ctx, p, rs, w.GracePeriod, obs.stopped)
		if err != nil {
			return worker.Result{Err: fmt.Errorf("kill pod %s/%s: %w", p.Namespace, p.Name, err)}
		}
		if w.Forget {
			// The dead containers stay until container GC removes them, as
			// upstream: their exit codes and logs remain readable meanwhile.
			return worker.Result{}
		}
		st := a.refreshStatus(ctx, w, nil, stopped)
		if a.cluster != nil && p.DeletionTimestamp != nil && st != nil {
			a.cluster.PodKilled(p, *st)
		}
		return worker.Result{}
	}

	if s := a.shutdowns.get(p.UID); s != nil {
		return a.syncShutdown(ctx, w, rs, s)
	}
	if exceeded, _ := a.activeDeadline(p); exceeded {
		// Past activeDeadlineSeconds the pod is Failed and stays stopped.
		klog.V(2).InfoS("Pod exceeded its active deadline; stopping it", "pod", klog.KObj(p))
		if !a.failedFor(p, status.ReasonDeadlineExceeded) {
			a.rt.PodEvent(p, v1.EventTypeNormal, status.ReasonDeadlineExceeded, status.MessageDeadlineExceeded)
		}
		stopped, err := a.stopPod(ctx, p, rs, nil, obs.stopped)
		if err != nil {
			err = fmt.Errorf("stop pod %s/%s past its active deadline: %w", p.Namespace, p.Name, err)
		}
		a.refreshStatus(ctx, w, nil, stopped)
		return worker.Result{Err: err}
	}
	if obs.stopped != "" && a.rt.InSync(p, rs, obs.stopped) {
		// A finished pod that this process stopped: nothing to do but
		// show what the runtime has, which the read just did.
		a.observe(p, rs, readAt, true, obs.stopped)
		a.publishStatus(w, rs, nil)
		return worker.Result{}
	}
	published := a.publishIfSlow(w, rs)
	res := a.rt.SyncPod(ctx, p, rs)
	published()
	if res.Err != nil {
		klog.ErrorS(res.Err, "Sync pod", "pod", klog.KObj(p), "uid", p.UID)
	}
	a.refreshStatus(ctx, w, res.Waiting, res.Stopped)
	// Sync again when the deadline passes (the first status sets the start).
	if _, left := a.activeDeadline(p); left > 0 && (res.RetryAfter == 0 || left < res.RetryAfter) {
		res.RetryAfter = left
	}
	return worker.Result{RetryAfter: res.RetryAfter, Err: res.Err}
}

// syncMirror creates or updates a static pod's mirror pod (cluster mode).
func (a *Agent) syncMirror(ctx context.Context, w worker.Work) {
	if a.cluster == nil || w.Type == worker.Kill || !pod.IsStatic(w.Pod) {
		return
	}
	if err := a.cluster.SyncMirror(ctx, w.Pod, w.MirrorPod); err != nil {
		klog.ErrorS(err, "Sync mirror pod", "pod", klog.KObj(w.Pod))
	}
}

// defaultSlowFirstSync: a new pod's first sync that takes longer publishes
// the status it started from. Short enough that a pod whose image pull
// takes minutes shows ContainerCreating at once, not nothing; long enough
// that a normal start (well under a second) costs no extra status write.
const defaultSlowFirstSync = 2 * time.Second

// publishIfSlow publishes, when the first sync of a pod with no status yet
// is still running after a.slowFirstSync, the status it started from: the
// pod Pending, its containers waiting in ContainerCreating, as upstream
// shows them during a pull (it publishes a status at the start of every
// sync). Later syncs are not covered: their pods have a status already,
// whose waiting reasons (ImagePullBackOff, ...) stay until the sync ends.
// The returned func stops the timer, or waits for a publish under way, so
// the status of the finished sync is always published last.
func (a *Agent) publishIfSlow(w worker.Work, rs *runtime.PodStatus) func() {
	if _, ok := a.statuses.Get(w.Pod.UID); ok {
		return func() {}
	}
	done := make(chan struct{})
	t := time.AfterFunc(a.slowFirstSync, func() {
		defer close(done)
		klog.V(2).InfoS("First sync of pod still running; publishing its pending status", "pod", klog.KObj(w.Pod))
		a.publishStatus(w, rs, nil)
	})
	return func() {
		if !t.Stop() {
			<-done
		}
	}
}

// failedFor reports whether the pod's last status already says it failed
// for reason.
func (a *Agent) failedFor(p *v1.Pod, reason string) bool {
	prev, ok := a.statuses.Get(p.UID)
	return ok && prev.Phase == v1.PodFailed && prev.Reason == reason
}

// activeDeadline applies the pod's activeDeadlineSeconds from the start
// time in its last status (this node's, or the API's).
func (a *Agent) activeDeadline(p *v1.Pod) (bool, time.Duration) {
	if p.Spec.ActiveDeadlineSeconds == nil {
		return false, 0
	}
	start := p.Status.StartTime
	if prev, ok := a.statuses.Get(p.UID); ok && prev.StartTime != nil {
		start = prev.StartTime
	}
	return status.ActiveDeadline(p, start, time.Now())
}

// refreshStatus re-reads the runtime after the sync acted, so the status
// shows what the sync just did without waiting for the next relist.
// stopped is the newest sandbox the sync stopped with the whole pod ("":
// none).
func (a *Agent) refreshStatus(ctx context.Context, w worker.Work, waiting map[string]runtime.ContainerWaiting, stopped string) *v1.PodStatus {
	p := w.Pod
	readAt := time.Now()
	rs, err := a.rt.PodStatus(ctx, p.UID, p.Name, p.Namespace)
	if err != nil {
		a.observed.delete(p.UID)
		klog.ErrorS(err, "Runtime status after sync", "pod", klog.KObj(p))
		return nil
	}
	a.observe(p, rs, readAt, w.Type != worker.Kill, stopped)
	return a.publishStatus(w, rs, waiting)
}

// observe records the worker's read rs of the runtime, begun at readAt;
// syncable: the pod is synced, not killed, so its plan decides whether the
// read leaves work.
func (a *Agent) observe(p *v1.Pod, rs *runtime.PodStatus, readAt time.Time, syncable bool, stopped string) {
	a.observed.set(p.UID, observation{
		fingerprint: pleg.StatusFingerprint(rs),
		at:          readAt,
		inSync:      syncable && a.rt.InSync(p, rs, stopped),
		stopped:     stopped,
	})
}

// stopPod stops the whole pod, unless the stop would only repeat the one
// this process did last (lastStopped, plan.StopDone). It returns the
// sandbox stopped (or found stopped).
func (a *Agent) stopPod(ctx context.Context, p *v1.Pod, rs *runtime.PodStatus, grace *int64, lastStopped string) (string, error) {
	if plan.StopDone(rs, lastStopped) {
		return lastStopped, nil
	}
	if err := a.rt.KillPod(ctx, p, rs, grace); err != nil {
		return "", err
	}
	if sb := rs.LatestSandbox(); sb != nil {
		return sb.ID, nil
	}
	return "", nil
}

// publishStatus generates the pod's status from rs and hands it to the
// status cache and the API.
func (a *Agent) publishStatus(w worker.Work, rs *runtime.PodStatus, waiting map[string]runtime.ContainerWaiting) *v1.PodStatus {
	p := w.Pod
	in := status.Input{
		Pod: p, Runtime: rs, Waiting: waiting, HostIP: a.cfg.HostIP, HostIPs: a.cfg.HostIPs,
		RuntimeName: a.cfg.RuntimeName, Now: time.Now(), Killed: w.Type == worker.Kill,
	}
	if a.prober != nil {
		podIP := rs.PodIP()
		if p.Spec.HostNetwork {
			podIP = a.cfg.HostIP
		}
		a.prober.Observe(p, rs, podIP)
		in.Probes = a.prober.View(p.UID)
	}
	if prev, ok := a.statuses.Get(p.UID); ok {
		in.Previous = &prev
	}
	if exceeded, _ := a.activeDeadline(p); exceeded {
		in.FailedReason, in.FailedMessage = status.ReasonDeadlineExceeded, status.MessageDeadlineExceeded
	}
	st := status.Generate(in)
	if s := a.shutdowns.get(p.UID); s != nil && s.mark != nil && w.Type != worker.Kill {
		s.mark(&st)
	}
	metrics.ObservePodStatus(p, in.Previous, st)
	a.statuses.Set(p.UID, st)
	if a.cluster != nil {
		a.cluster.SetPodStatus(p, st)
	}
	return &st
}

// killLeftover is the killer's KillFunc: stop everything of a pod that no
// source wants; container GC removes what is left.
func (a *Agent) killLeftover(ctx context.Context, p *runtime.Pod) error {
	rs, err := a.rt.PodStatus(ctx, p.UID, p.Name, p.Namespace)
	if err != nil {
		return fmt.Errorf("runtime status of leftover pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	klog.InfoS("Stopping pod no source wants", "pod", klog.KRef(p.Namespace, p.Name), "uid", p.UID)
	if err := a.rt.KillPod(ctx, nil, rs, nil); err != nil {
		return fmt.Errorf("kill leftover pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}
