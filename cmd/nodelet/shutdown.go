package main

import (
	"errors"
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/shutdown"
)

// shutdownState is the node's side of a graceful shutdown: the node
// controller reports the node not ready while it is set.
type shutdownState struct{ on atomic.Bool }

// ShuttingDown implements shutdown.Node.
func (s *shutdownState) ShuttingDown(on bool) { s.on.Store(on) }

func (s *shutdownState) get() bool { return s.on.Load() }

// shutdownPods adapts the agent to shutdown.Pods.
type shutdownPods struct{ a *agent.Agent }

func (p shutdownPods) Active() []*v1.Pod { return p.a.ActivePods() }

func (p shutdownPods) Kill(pod *v1.Pod, grace int64, mark func(*v1.PodStatus)) <-chan struct{} {
	return p.a.StopForShutdown(pod, grace, mark)
}

// logindDialer connects to systemd-logind; a var for tests.
var logindDialer = func() (shutdown.Logind, error) { return shutdown.DialLogind() }

// gracefulShutdown returns the graceful node shutdown component when
// shutdownGracePeriod is set and systemd-logind runs (nil, nil otherwise:
// it says at start why pods will not be stopped gracefully). Settings that
// cannot work are refused.
func gracefulShutdown(opts *options.Options, ag *agent.Agent, node shutdown.Node) (*component, error) {
	if opts.ShutdownGracePeriod <= 0 {
		if opts.ShutdownGracePeriodCriticalPods > 0 {
			return nil, fmt.Errorf("shutdownGracePeriodCriticalPods (%v) needs a shutdownGracePeriod", opts.ShutdownGracePeriodCriticalPods)
		}
		return nil, nil
	}
	if _, err := shutdown.Groups(opts.ShutdownGracePeriod, opts.ShutdownGracePeriodCriticalPods); err != nil {
		return nil, err
	}
	logind, err := logindDialer()
	switch {
	case errors.Is(err, shutdown.ErrNoLogind):
		klog.Warningf("shutdownGracePeriod (%v) is set, but systemd-logind does not run on this host (%v), so nothing announces a node shutdown: pods are not stopped gracefully when the node shuts down",
			opts.ShutdownGracePeriod, err)
		return nil, nil
	case err != nil:
		klog.Warningf("shutdownGracePeriod (%v) is set, but nodelet could not tell whether systemd-logind runs (%v); pods are not stopped gracefully when the node shuts down",
			opts.ShutdownGracePeriod, err)
		return nil, nil
	}
	m, err := shutdown.NewManager(shutdown.Config{
		GracePeriod: opts.ShutdownGracePeriod, CriticalGracePeriod: opts.ShutdownGracePeriodCriticalPods,
	}, logind, shutdownPods{ag}, node)
	if err != nil {
		return nil, err
	}
	return &component{"graceful node shutdown", m.Run}, nil
}
