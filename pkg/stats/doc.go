// Package stats builds the kubelet stats API (/stats/summary,
// k8s.io/kubelet/pkg/apis/stats/v1alpha1) from the container runtime and
// the host: containers' CPU, memory and writable layer from CRI
// ListContainerStats; pod figures from CRI ListPodSandboxStats when the
// runtime can (containerd 1.6 cannot without sandbox cgroups) and otherwise
// summed from the containers, with pod network read from the sandbox's
// network namespace; node CPU, memory, network and process counts from
// /proc; filesystems with statfs; log and emptyDir usage by walking them.
//
// There is no cAdvisor: what the runtime and /proc do not say is left out
// rather than guessed.
package stats
