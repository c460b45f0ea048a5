// Package security holds nodelet's decisions on a pod's security settings,
// as pure functions over the pod and node facts: which pods are refused at
// admission (forbidden sysctls, AppArmor where the kernel has none, ...),
// whether a container may run given runAsNonRoot and its image's user, and
// which seccomp profile a container gets. The CRI config builders and the
// sync loop call it; it does no I/O beyond the small host probes in host.go.
//
// The behaviour and the messages follow the upstream kubelet's, so a pod is
// refused on nodelet exactly where and how it would be there.
package security
