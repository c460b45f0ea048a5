package main

import (
	"context"
	"errors"

	"github.com/nodelet/nodelet/pkg/agent"
	"github.com/nodelet/nodelet/pkg/config"
)

// apiSource returns the runner of the API server pod source, which writes
// to out.
// TODO(pods): wire the API source here.
func (c *clusterEnv) apiSource(out chan<- config.PodUpdate) (func(context.Context), error) {
	return nil, errors.New("the API server pod source is not implemented yet")
}

// podCluster returns the agent's view of the cluster: mirror pods, status
// sync, final deletion.
// TODO(pods): wire mirror pods and status sync here.
func (c *clusterEnv) podCluster() (agent.Cluster, error) {
	return nil, errors.New("mirror pods and status sync are not implemented yet")
}
