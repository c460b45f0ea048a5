package main

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/pkg/certs"
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
	// creds is the client certificate from TLS bootstrapping and/or
	// rotation; nil when the kubeconfig is used as it is.
	creds *certs.Client
}

// Client-side rate limits: upstream's 5 QPS starves status updates during a
// burst of pod starts; a node agent's traffic is small and bursty, so allow
// bursts and a higher sustained rate.
const (
	clientQPS   = 50
	clientBurst = 100
)

func newCluster(opts *options.Options, nodeName, hostIP string) (*cluster, error) {
	c := &cluster{opts: opts, nodeName: nodeName, hostIP: hostIP}
	var err error
	c.creds, err = certs.NewClient(certs.ClientConfig{
		KubeconfigPath: opts.KubeconfigPath, BootstrapKubeconfigPath: opts.BootstrapKubeconfigPath,
		CertDir: opts.CertDir, NodeName: nodeName, Rotate: opts.RotateCertificates,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	if c.client, err = kube.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return c, nil
}

// restConfig is a fresh client configuration for the API server: the
// kubeconfig's, or one presenting the managed client certificate.
func (c *cluster) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	if c.creds != nil {
		cfg = c.creds.RESTConfig()
	} else {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", c.opts.KubeconfigPath); err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", c.opts.KubeconfigPath, err)
		}
	}
	cfg.UserAgent = version.UserAgent()
	return cfg, nil
}
