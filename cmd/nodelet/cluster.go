package main

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/version"
)

// cluster is what the cluster-member parts (node registration, API pod
// source, mirror pods, status sync, events, volumes with API content) are
// built from. It exists only with --kubeconfig and does not change once
// made; each part is built by a method taking what else it needs, in its
// own file: cluster_node.go, cluster_pods.go, cluster_volumes.go.
type cluster struct {
	opts     *options.Options
	nodeName string
	hostIP   string
	client   kube.Interface
}

// Client-side rate limits: upstream's 5 QPS starves status updates during a
// burst of pod starts; a node agent's traffic is small and bursty, so allow
// bursts and a higher sustained rate.
const (
	clientQPS   = 50
	clientBurst = 100
)

func newCluster(opts *options.Options, nodeName, hostIP string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", opts.KubeconfigPath, err)
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.UserAgent = version.UserAgent()
	client, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return &cluster{opts: opts, nodeName: nodeName, hostIP: hostIP, client: client}, nil
}
