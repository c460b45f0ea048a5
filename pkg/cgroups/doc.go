// Package cgroups owns the node's pod cgroups: the kubepods hierarchy with
// its burstable and besteffort QoS cgroups, and one cgroup per pod
// (pod<uid>) carrying the pod's CPU, memory and PID limits, under which the
// runtime puts the pod's sandbox and containers (CRI's CgroupParent).
//
// The rules are the upstream kubelet's (pkg/kubelet/cm): names per cgroup
// driver (name.go), the limits of a pod by QoS class (limits.go), the files
// that carry them on cgroup v1 and v2 (files.go) and the OOM score of a
// container by QoS class (oom.go) are pure functions; Manager (manager.go)
// is the I/O that writes them for the host's actual cgroup mode.
//
// Only the cgroupfs driver writes cgroups: the systemd driver needs slices
// made through systemd's D-Bus API, which nodelet does not do yet, so
// New refuses it (the names it would use are computed and tested).
package cgroups
