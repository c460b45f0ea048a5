package main

import (
	"errors"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/shutdown"
)

// reportShutdown says at start what a set shutdownGracePeriod meets on
// this host. nodelet does not stop pods on node shutdown (the option is
// warned about as ignored); this tells the operator whether the host could
// even announce a shutdown, so nobody counts on a graceful one.
func reportShutdown(opts *options.Options) {
	if opts.ShutdownGracePeriod <= 0 {
		return
	}
	err := shutdown.Probe()
	switch {
	case errors.Is(err, shutdown.ErrNoLogind):
		klog.Warningf("shutdownGracePeriod (%v) is set, but systemd-logind does not run on this host (%v), so nothing announces a node shutdown: pods are not stopped gracefully when the node shuts down",
			opts.ShutdownGracePeriod, err)
	case err != nil:
		klog.Warningf("shutdownGracePeriod (%v) is set, but nodelet could not tell whether systemd-logind runs (%v); nodelet does not stop pods gracefully when the node shuts down",
			opts.ShutdownGracePeriod, err)
	default:
		klog.Warningf("shutdownGracePeriod (%v) is set and systemd-logind runs, but nodelet does not take a shutdown delay lock: pods are not stopped gracefully when the node shuts down",
			opts.ShutdownGracePeriod)
	}
}
