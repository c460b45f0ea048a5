package main

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/pkg/certs"
	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/node"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/version"
)

// nodeHost is what the Node's status reports of this host besides its
// static facts.
type nodeHost struct {
	runtime        *cri.Client
	diskPressure   func() bool
	runtimeHealthy func() error
	shuttingDown   func() bool
	devices        nodeDevices // nil: no device plugins
}

// nodeController registers the Node and keeps its status and Lease fresh.
// It runs beside everything else: nothing waits for it, and it retries on
// its own while the API server is unreachable.
func (c *cluster) nodeController(h nodeHost, recorder record.EventRecorder) (*node.Controller, error) {
	ips := c.nodeIPs()
	host := node.HostConfig{RootDir: c.opts.RootDir, DiskPressure: h.diskPressure, RuntimeHealthy: h.runtimeHealthy, ShuttingDown: h.shuttingDown, Runtime: h.runtime}
	heartbeat, err := c.heartbeatClient()
	if err != nil {
		return nil, err
	}
	ctrl, err := node.NewController(nodeConfig(c.opts, c.nodeName, ips), node.Clients{Client: c.client, Heartbeat: heartbeat}, withDevices(node.NewHostFacts(host), h.devices), recorder)
	if err != nil {
		return nil, err
	}
	return ctrl, nil
}

// heartbeatClient is a client for the node status and Lease without a
// client-side rate limit, as upstream's heartbeat client: a burst of pod
// traffic on the shared client must not delay the heartbeat until the node
// looks dead. pkg/node bounds each of its calls with a deadline.
func (c *cluster) heartbeatClient() (kube.Interface, error) {
	return c.ownClient("heartbeat", -1, 0) // no rate limiter
}

// reviewClient is the node API's client for TokenReviews and
// SubjectAccessReviews, with a rate limit of its own: a caller cycling
// through garbage tokens (each one a review) then waits on its own budget
// instead of starving pod status and mirror pod traffic on the shared
// client.
func (c *cluster) reviewClient() (kube.Interface, error) {
	return c.ownClient("review", 50, 100)
}

// ownClient is an API client with its own rate limiter (qps < 0: none).
func (c *cluster) ownClient(purpose string, qps float32, burst int) (kube.Interface, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	client, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s API client: %w", purpose, err)
	}
	return client, nil
}

// nodeIPs are the node's addresses: the host IP first, then the other
// --node-ip ones.
func (c *cluster) nodeIPs() []string { return nodeIPList(c.hostIP, c.opts) }

// servingCertificate is the node API's serving certificate from the
// cluster (serverTLSBootstrap), for the addresses the Node reports.
func (c *cluster) servingCertificate() (*certs.Serving, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	addrs := certs.NodeAddresses(c.opts.Hostname, c.nodeIPs())
	sc := certs.ServingConfig{
		CertDir: c.opts.CertDir, NodeName: c.nodeName, API: cfg,
		Addresses: func() []v1.NodeAddress { return addrs },
	}
	if c.creds != nil {
		sc.CanAsk = func() bool { return c.creds.Current() != nil }
	}
	return certs.NewServing(sc), nil
}

// nodeConfig is the Node nodelet registers and keeps, from the options.
func nodeConfig(opts *options.Options, nodeName string, ips []string) node.Config {
	// Upstream: an explicitly set --node-status-update-frequency is also the
	// default report period. nodelet cannot tell "set to 10s" from "left at
	// 10s", so a non-default value counts as set.
	report := node.DefaultStatusReportFrequency
	if f := opts.NodeStatusUpdateFrequency; f != node.DefaultStatusUpdateFrequency {
		report = f
	}
	res := parseReservations(opts)
	return node.Config{
		Reserved:              res.reserved(),
		HardEviction:          res.hard,
		NodeName:              nodeName,
		Hostname:              opts.Hostname,
		NodeIPs:               ips,
		Labels:                opts.NodeLabels,
		Taints:                opts.NodeTaints(),
		RegisterNode:          opts.RegisterNode,
		NodeIPGiven:           len(opts.NodeIPs()) > 0,
		ExternalCloudProvider: opts.CloudProvider == options.CloudProviderExternal,
		ProviderID:            opts.ProviderID,
		StatusUpdateFrequency: opts.NodeStatusUpdateFrequency,
		StatusReportFrequency: report,
		LeaseDurationSeconds:  int32(opts.NodeLeaseDurationSeconds),
		MaxPods:               opts.MaxPods,
		KubeletPort:           int32(opts.Port),
		Version:               version.String(),
	}
}
