//go:build tools

// Package tools pins the versions of the binaries that the test harness builds:
// kube-apiserver, etcd and the upstream kubelet (for side-by-side benchmarks).
// Build them with hack/build-tools.sh. The product module never imports this.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
