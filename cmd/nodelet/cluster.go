package main

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/status"
	"github.com/nodelet/nodelet/pkg/volumes"
)

// clusterEnv is what the cluster-member parts (node registration, API pod
// source, mirror pods, status sync, events) are wired from. It exists only
// with --kubeconfig. Each part has its own file: cluster_node.go,
// cluster_pods.go.
type clusterEnv struct {
	opts     *options.Options
	nodeName string
	hostIP   string
	client   kube.Interface

	// Filled by run as the parts they come from are built.
	pods           *pod.Manager
	statuses       *status.Cache
	cri            *cri.Client
	recorder       record.EventRecorder
	registry       prometheus.Registerer
	diskPressure   func() bool
	runtimeHealthy func() error
	// resync has a pod synced now (the agent's Resync), set once the agent
	// exists; the volume provider wakes pods whose objects appeared.
	resync func(types.UID)
	// volumes is the provider volumeProvider made.
	volumes *volumes.Provider

	// podRunners is the pod half's background work, built by podCluster and
	// run with the API source (cluster_pods.go).
	podRunners []func(context.Context)
}

// Client-side rate limits: upstream's 5 QPS starves status updates during a
// burst of pod starts; a node agent's traffic is small and bursty, so allow
// bursts and a higher sustained rate.
const (
	clientQPS   = 50
	clientBurst = 100
)

func newClusterEnv(opts *options.Options, nodeName, hostIP string) (*clusterEnv, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", opts.KubeconfigPath, err)
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.UserAgent = "nodelet/" + version
	client, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return &clusterEnv{opts: opts, nodeName: nodeName, hostIP: hostIP, client: client}, nil
}

// startEventSink sends recorded events to the API server as well as to the
// log. The broadcaster queues and retries, so an API outage never blocks a
// pod worker that records an event.
func (c *clusterEnv) startEventSink(b record.EventBroadcaster) {
	b.StartRecordingToSink(kube.EventSink{Client: c.client})
}

// runners returns the long-running cluster parts to start with nodelet.
func (c *clusterEnv) runners() ([]func(context.Context), error) {
	node, err := c.nodeRunner()
	if err != nil {
		return nil, err
	}
	return []func(context.Context){node}, nil
}
