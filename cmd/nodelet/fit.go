package main

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/admission"
	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/node"
	"github.com/nodelet/nodelet/pkg/options"
)

// fitNode is the node pods are judged against at admission: the Node as the
// API shows it once registered (labels and taints an administrator set
// there count, and the allocatable it reports), before that and standalone
// the Node as nodelet would register it.
type fitNode struct {
	local *v1.Node
	mu    sync.Mutex
	api   func() *v1.Node
	// devices, when set, are the device plugins, whose resources their
	// own admission judges.
	devices nodeDevices
}

// newFitNode builds the local Node from the options and the machine (no
// runtime calls: only CPUs, memory, huge pages and the root dir's size).
func newFitNode(ctx context.Context, opts *options.Options, nodeName string, ips []string) *fitNode {
	facts := node.NewHostFacts(node.HostConfig{RootDir: opts.RootDir}).Facts(ctx)
	local, err := node.LocalNode(nodeConfig(opts, nodeName, ips), facts, time.Now())
	if err != nil {
		// The same configuration fails registration with the reason;
		// admission then judges against the machine alone.
		klog.ErrorS(err, "Node for admission")
		local = &v1.Node{}
		local.Name = nodeName
	}
	return &fitNode{local: local}
}

// useAPI makes admission read the registered Node from get once it has one.
func (f *fitNode) useAPI(get func() *v1.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.api = get
}

func (f *fitNode) get() admission.Node {
	f.mu.Lock()
	api := f.api
	f.mu.Unlock()
	n := f.local
	if api != nil {
		if registered := api(); registered != nil {
			n = registered
		}
	}
	return admission.Node{Object: n, Allocatable: withoutDevices(n.Status.Allocatable, f.devices)}
}

// podPreemption chooses, as upstream, the pods to stop so that a critical
// pod fits on the node's allocatable.
func podPreemption(fit *fitNode) agent.PreemptFunc {
	return func(p *v1.Pod, active []*v1.Pod) ([]*v1.Pod, error) {
		return admission.Preemptees(p, active, admission.Shortfall(p, active, fit.get().Allocatable))
	}
}
