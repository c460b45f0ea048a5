// Package kube is nodelet's client of the Kubernetes API: the few resources a
// node agent reads and writes (pods, nodes, leases, events, config maps,
// secrets, service-account tokens, token and access reviews) on a scheme that
// holds only their API groups.
//
// It exists for memory: k8s.io/client-go/kubernetes (and every typed client
// under it, through k8s.io/client-go/kubernetes/scheme) links and registers
// every API group at start-up, which costs a node agent more resident memory
// than all of its own state. The clients here are client-go's generic ones
// (k8s.io/client-go/gentype) over per-group REST clients, so they behave as
// the generated ones do (protobuf by default, one shared rate limiter).
//
// Consumers depend on Interface; tests wrap a client-go fake clientset with
// kubefake.Wrap.
package kube
