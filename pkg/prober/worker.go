package prober

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/metrics"
)

// worker probes one container instance with one kind of probe, on its own
// goroutine, until its context ends or its probe has said all it can.
type worker struct {
	m      *Manager
	kind   Kind
	pod    *v1.Pod
	target probeTarget
	spec   *v1.Probe
	cfg    settings
	// startedAt is when the container started: the initial delay counts
	// from it.
	startedAt time.Time
	// spread: the container was running before nodelet saw it (a restart
	// of nodelet), so the first probe is spread over a period instead of
	// all adopted containers being probed at once.
	spread bool
	series *metrics.ProbeSeries

	ctx    context.Context
	cancel context.CancelFunc
}

// run probes until stopped. Results are folded into the instance's state
// through the manager.
func (w *worker) run() {
	defer w.cancel()
	delay := firstDelay(w.startedAt, time.Now(), w.cfg.initialDelay)
	if w.spread {
		delay += time.Duration(rand.Int64N(int64(w.cfg.period)))
	}
	if !w.sleep(delay) {
		return
	}
	var s streak
	_ = wait.PollUntilContextCancel(w.ctx, w.cfg.period, true, func(context.Context) (bool, error) {
		r := w.probe()
		var commit bool
		s, commit = step(s, r, w.cfg)
		return commit && !w.m.record(w, r), nil
	})
}

func (w *worker) sleep(d time.Duration) bool {
	if d <= 0 {
		return w.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// probe runs the probe once (retrying a probe that could not run at all
// up to three times, as upstream) and reports it: metrics, and the
// Unhealthy or ProbeWarning event.
func (w *worker) probe() Result {
	start := time.Now()
	var (
		out  outcome
		msg  string
		err  error
		pass int
	)
	for pass = 0; pass < 3; pass++ {
		out, msg, err = w.m.handlers.run(w.ctx, w.spec, w.target)
		if err == nil || w.ctx.Err() != nil {
			break
		}
	}
	if w.ctx.Err() != nil {
		return Unknown // stopped mid-probe: the answer is about nothing
	}
	if err != nil {
		klog.V(1).InfoS("Probe errored", "probeType", w.kind, "pod", klog.KObj(w.pod), "container", w.target.container.Name, "err", err)
		w.m.event(w.pod, v1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe errored and resulted in %s state: %s", w.kind, "unknown", err))
		return Unknown
	}
	switch out {
	case outcomeWarning:
		w.m.event(w.pod, v1.EventTypeWarning, "ProbeWarning", fmt.Sprintf("%s probe warning: %s", w.kind, msg))
		fallthrough
	case outcomeSuccess:
		w.series.Observe(metrics.ProbeResultSuccessful, time.Since(start))
		return Success
	}
	klog.V(1).InfoS("Probe failed", "probeType", w.kind, "pod", klog.KObj(w.pod), "container", w.target.container.Name, "output", msg)
	w.m.event(w.pod, v1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", w.kind, msg))
	w.series.Observe(metrics.ProbeResultFailed, time.Since(start))
	return Failure
}
