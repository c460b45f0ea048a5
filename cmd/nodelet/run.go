package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/tracing"
)

// eventSourceComponent is the source of the events nodelet records:
// upstream's "kubelet", so that what filters on it (kubectl get events
// --field-selector source=kubelet, dashboards, the e2e suite) finds them.
const eventSourceComponent = "kubelet"

// run wires nodelet together and blocks until ctx is done. It works in two
// phases: build constructs every part from complete dependencies and starts
// nothing; then, once every port is bound, all parts start from one group,
// and run returns only when every one of them has stopped.
func run(ctx context.Context, opts *options.Options) error {
	if err := os.MkdirAll(opts.RootDir, 0o750); err != nil {
		return fmt.Errorf("create root dir: %w", err)
	}
	tp, err := tracing.NewProvider(ctx, opts.Tracing, opts.Hostname)
	if err != nil {
		return err
	}
	defer func() {
		// Flush the spans batched so far; an exporter that cannot reach
		// its endpoint must not hold up the stop.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			klog.InfoS("Tracing: spans not flushed at stop", "err", err)
		}
	}()
	client, err := dialRuntime(ctx, opts.ContainerRuntimeEndpoint, cri.Options{Tracing: tp})
	if err != nil {
		return err
	}
	defer client.Close()

	d, err := build(ctx, opts, client, tp)
	if err != nil {
		return err
	}
	// Bind every port before anything runs, so a port in use fails start-up
	// with a clear error instead of half a node agent.
	for _, s := range d.servers {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	stopEvents := d.startEvents()
	defer stopEvents()
	return runComponents(ctx, d.components)
}

// dialRuntime waits for the runtime to answer: at boot it may start after
// nodelet. It gives up after a minute with the last error, so a wrong
// endpoint is reported rather than waited on forever.
func dialRuntime(ctx context.Context, endpoint string, copts cri.Options) (*cri.Client, error) {
	var client *cri.Client
	var lastErr error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: 1 << 30}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := wait.ExponentialBackoffWithContext(dctx, backoff, func(ctx context.Context) (bool, error) {
		client, lastErr = cri.Dial(ctx, endpoint, copts)
		if lastErr != nil {
			klog.InfoS("Waiting for the container runtime", "endpoint", endpoint, "err", lastErr)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			return nil, fmt.Errorf("container runtime at %s: %w", endpoint, lastErr)
		}
		return nil, fmt.Errorf("container runtime at %s: %w", endpoint, err)
	}
	return client, nil
}

// runtimeName is the prefix of container IDs in statuses ("containerd").
func runtimeName(ctx context.Context, c *cri.Client) string {
	v, err := c.Version(ctx)
	if err != nil || v.RuntimeName == "" {
		return "containerd"
	}
	return v.RuntimeName
}
