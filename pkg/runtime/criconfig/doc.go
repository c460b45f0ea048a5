// Package criconfig translates a pod, and what the pod-resource pipeline
// prepared for it (package podsync: volume paths, the config maps and
// secrets its environment refers to, the sandbox's cgroup parent, each
// container's devices, extra variables and mounts), into CRI sandbox and
// container configs: identity labels, environment, DNS, hosts file,
// mounts, devices, security context and resources. It does no I/O: every
// input is data, so each decision is a pure function tested with tables.
// What must happen on the node for a config to work (directories, subPath
// binds, API reads) is the caller's; ContainerConfig returns the subPath
// binds to make. The way back, CRI state to nodelet's runtime model, is
// package cristatus.
package criconfig
