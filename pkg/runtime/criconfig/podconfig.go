package criconfig

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/cgroups"
	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/security"
)

// ConfigOptions are the node facts pod configs are built with.
type ConfigOptions struct {
	// PodLogsDir holds one log directory per pod (upstream: /var/log/pods).
	PodLogsDir string
	// RootDir is nodelet's state directory; pod volumes live under
	// RootDir/pods/<uid>/volumes.
	RootDir  string
	NodeName string
	// NodeIPs are the node's addresses, for status.hostIP(s) in env and as
	// the IPs of host-network pods.
	NodeIPs []string
	// ClusterDNS and ClusterDomain configure pods with the ClusterFirst DNS
	// policy. With no ClusterDNS such pods use the node's resolver.
	ClusterDNS    []string
	ClusterDomain string
	// SeccompDefault is --seccomp-default: containers that ask for no
	// seccomp profile get the runtime's default instead of none.
	SeccompDefault bool
	// UserNamespaces is whether the runtime supports pods in their own
	// user namespace (CRI Status, default handler).
	UserNamespaces bool
	// MaskedPaths is what a container with the default procMount has
	// masked (see MaskedPaths); nil: MaskedPaths().
	MaskedPaths []string
	// HostDNS is the node's resolver configuration (see ParseResolvConf).
	// Nil means "let the runtime copy the node's /etc/resolv.conf".
	HostDNS *runtimeapi.DNSConfig
	// NodeAllocatable is what a resourceFieldRef to an unset limit reads.
	NodeAllocatable v1.ResourceList
	// MemoryCapacity is the node's memory in bytes, what a Burstable
	// container's OOM score is relative to (package cgroups); 0: unknown.
	MemoryCapacity int64
	// ServiceEnv, when set, returns the service variables of a pod
	// (KUBERNETES_SERVICE_HOST, docker links) added to every container;
	// an error keeps the container from starting.
	ServiceEnv func(pod *v1.Pod) (map[string]string, error)
}

// PodLogDir returns the directory holding a pod's container logs,
// <podLogsDir>/<namespace>_<name>_<uid>, the layout log collectors expect.
func PodLogDir(podLogsDir, namespace, name string, uid types.UID) string {
	return filepath.Join(podLogsDir, fmt.Sprintf("%s_%s_%s", namespace, name, uid))
}

// ContainerLogPath returns a container's log file relative to the pod log
// directory: <container>/<restartCount>.log.
func ContainerLogPath(name string, restartCount int) string {
	return filepath.Join(name, fmt.Sprintf("%d.log", restartCount))
}

// SandboxResources are what the pod-resource pipeline (package podsync)
// prepared for a pod's sandbox before it is created.
type SandboxResources struct {
	// CgroupParent is the cgroup the sandbox and its containers are
	// created under; "" is the runtime's default.
	CgroupParent string
}

// ContainerResources are what the pod-resource pipeline prepared for one
// container besides its volumes (what a device plugin allocates).
type ContainerResources struct {
	// Devices are made available in the container.
	Devices []*runtimeapi.Device
	// Env are variables added to the container's environment after its
	// own; a name the spec's environment defines keeps the spec's value.
	Env []*runtimeapi.KeyValue
	// Mounts are added after the volume mounts; one at a path a volume is
	// mounted at fails the container.
	Mounts []*runtimeapi.Mount
}

// SandboxConfig builds the sandbox config of a pod for the given attempt,
// with what the pipeline prepared for it (res).
func SandboxConfig(pod *v1.Pod, attempt uint32, res SandboxResources, opts ConfigOptions) (*runtimeapi.PodSandboxConfig, error) {
	id := cri.SandboxIdentity{
		PodName:      pod.Name,
		PodNamespace: pod.Namespace,
		PodUID:       pod.UID,
		HostNetwork:  pod.Spec.HostNetwork,
	}
	sc, err := sandboxSecurityContext(pod, opts)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: PodLogDir(opts.PodLogsDir, pod.Namespace, pod.Name, pod.UID),
		DnsConfig:    DNSConfig(pod, opts),
		PortMappings: portMappings(pod),
		Labels:       merge(pod.Labels, id.Labels()),
		Annotations:  merge(pod.Annotations, id.Annotations()),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    res.CgroupParent,
			SecurityContext: sc,
		},
	}
	// A host-network sandbox has the node's hostname; setting one would
	// have the runtime write a conflicting /etc/hostname.
	if !pod.Spec.HostNetwork {
		if cfg.Hostname, err = kernelHostname(pod, opts.ClusterDomain); err != nil {
			return nil, err
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		cfg.Linux.Sysctls = make(map[string]string, len(sc.Sysctls))
		for _, s := range sc.Sysctls {
			cfg.Linux.Sysctls[s.Name] = s.Value
		}
	}
	return cfg, nil
}

// ContainerParams are the per-instance inputs of a container config.
type ContainerParams struct {
	// RestartCount is the attempt number of the instance to create.
	RestartCount int
	// ImageRef is the resolved image (ID or digest) to run; "" runs the
	// spec's image by name.
	ImageRef string
	// PodIPs are the sandbox's IPs, needed only by env entries that refer
	// to status.podIP(s).
	PodIPs []string
	// ImageUID and ImageUser are the user the image runs as (CRI
	// ImageStatus): a uid, else a name; neither means root. They decide
	// runAsNonRoot and the user of a container that sets none.
	ImageUID  *int64
	ImageUser string
	// EnvObjects are the config maps and secrets the container's
	// environment refers to, as read; nil (no API client): such references
	// fail the container.
	EnvObjects *EnvObjects
	// VolumePaths are the node paths of the pod's volumes by name, as
	// prepared (VolumePaths); a mount of a volume missing here fails.
	VolumePaths map[string]string
	// TerminationMessageFile is the host file, created for this instance,
	// mounted at the container's terminationMessagePath; "" mounts none.
	TerminationMessageFile string
	// Warn, when set, reports what was skipped as upstream does with an
	// event (envFrom keys that are no variable names).
	Warn func(reason, message string)
	// EtcHostsFile is the pod's managed hosts file (HostsFile), mounted at
	// /etc/hosts; "" leaves /etc/hosts to the runtime.
	EtcHostsFile string
	// Resources are what the pipeline prepared for this container besides
	// its volumes.
	Resources ContainerResources
	// TargetContainerID, for an ephemeral container with a
	// targetContainerName, is the runtime ID of the target's running
	// instance: the container joins its process namespace.
	TargetContainerID string
}

// ContainerConfig builds the config of one container instance, and the
// subPath binds the caller must make (package volumes/subpath) before the
// runtime can mount their targets. It fails for specs nodelet cannot honour
// yet (env sources other than values and simple field references,
// unsupported volumes), rather than silently running something else than
// asked.
func ContainerConfig(pod *v1.Pod, c *v1.Container, p ContainerParams, opts ConfigOptions) (*runtimeapi.ContainerConfig, []SubpathMount, error) {
	env, err := containerEnv(pod, c, p, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	env = withPreparedEnv(env, p.Resources.Env)
	if len(c.VolumeDevices) > 0 {
		return nil, nil, fmt.Errorf("container %q: volumeDevices %w", c.Name, ErrUnsupported)
	}
	// Upstream's runAsNonRoot messages name the pod and container already.
	if err := security.VerifyRunAsNonRoot(pod, c, p.ImageUID, p.ImageUser); err != nil {
		return nil, nil, err
	}
	sc, err := containerSecurityContext(pod, c, p, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	lookup := envLookup(env)
	mounts, binds, err := containerMounts(pod, c, opts, p.VolumePaths, lookup)
	if err != nil {
		return nil, nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	if p.TerminationMessageFile != "" && c.TerminationMessagePath != "" {
		mounts = append(mounts, &runtimeapi.Mount{HostPath: p.TerminationMessageFile, ContainerPath: c.TerminationMessagePath})
	}
	if m := etcHostsMount(c, p.EtcHostsFile); m != nil {
		mounts = append(mounts, m)
	}
	if mounts, err = withPreparedMounts(mounts, p.Resources.Mounts); err != nil {
		return nil, nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	id := cri.ContainerIdentity{
		PodName:                  pod.Name,
		PodNamespace:             pod.Namespace,
		PodUID:                   pod.UID,
		ContainerName:            c.Name,
		Hash:                     runtime.HashContainer(c),
		RestartCount:             p.RestartCount,
		TerminationGracePeriod:   pod.Spec.TerminationGracePeriodSeconds,
		DeletionGracePeriod:      pod.DeletionGracePeriodSeconds,
		TerminationMessagePath:   c.TerminationMessagePath,
		TerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		id.PreStopHandler = jsonString(c.Lifecycle.PreStop)
	}
	if len(c.Ports) > 0 {
		id.Ports = jsonString(c.Ports)
	}
	if podutil.IsStatic(pod) {
		id.SpecHash = runtime.HashContainerSpec(c)
	}
	image := p.ImageRef
	if image == "" {
		image = c.Image
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(p.RestartCount)},
		Image:    &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		// $(VAR) references in command and args expand against the
		// container's environment, as the API documents.
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        env,
		Mounts:      mounts,
		Labels:      id.Labels(),
		Annotations: id.Annotations(),
		LogPath:     ContainerLogPath(c.Name, p.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Devices:     p.Resources.Devices,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, c, opts.MemoryCapacity),
			SecurityContext: sc,
		},
	}
	return cfg, binds, nil
}

// jsonString is v's JSON, the format of the annotations upstream stamps a
// container's preStop handler and ports in. A value that does not marshal
// (API types always do) is left out rather than failing the container.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// withPreparedEnv appends the variables the pipeline prepared to a
// container's environment, leaving out those it defines. Upstream lists a
// device plugin's variables first and the runtime lets the spec's later
// definition of a name win; listing them after without the names the spec
// defines gives the container the same environment, whatever the runtime
// does with a name defined twice.
func withPreparedEnv(env, prepared []*runtimeapi.KeyValue) []*runtimeapi.KeyValue {
	if len(prepared) == 0 {
		return env
	}
	defined := make(map[string]bool, len(env))
	for _, kv := range env {
		defined[kv.Key] = true
	}
	for _, kv := range prepared {
		if !defined[kv.Key] {
			env = append(env, kv)
		}
	}
	return env
}

// withPreparedMounts appends the mounts the pipeline prepared to a
// container's mounts; two at one container path would leave the runtime to
// pick one, so that fails.
func withPreparedMounts(mounts, prepared []*runtimeapi.Mount) ([]*runtimeapi.Mount, error) {
	for _, m := range prepared {
		for _, have := range mounts {
			if have.ContainerPath == m.ContainerPath {
				return nil, fmt.Errorf("prepared mount at %s: a volume is mounted there", m.ContainerPath)
			}
		}
		mounts = append(mounts, m)
	}
	return mounts, nil
}

func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var pms []*runtimeapi.PortMapping
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort == 0 {
				continue
			}
			pms = append(pms, &runtimeapi.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return pms
}

func protocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}

func namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// CPU and memory limits become cgroup settings the way the API documents
// them: shares from the request (2, the minimum, without one), a CFS quota
// per 100 ms period from the limit, and the memory limit as is. The OOM
// score adjustment follows the pod's QoS class, as upstream's; the runtime
// may raise it to its own (containerd's restrict_oom_score_adj).
const (
	minShares    = 2
	sharesPerCPU = 1024
	cfsPeriod    = 100000 // µs
	minQuota     = 1000   // µs, the kernel's minimum quota
)

func containerResources(pod *v1.Pod, c *v1.Container, memoryCapacity int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{OomScoreAdj: cgroups.OOMScoreAdj(pod, c, memoryCapacity)}
	req, hasReq := c.Resources.Requests[v1.ResourceCPU]
	lim, hasLim := c.Resources.Limits[v1.ResourceCPU]
	milli := int64(0)
	switch {
	case hasReq:
		milli = req.MilliValue()
	case hasLim:
		milli = lim.MilliValue()
	}
	r.CpuShares = max(milli*sharesPerCPU/1000, minShares)
	if hasLim && !lim.IsZero() {
		r.CpuPeriod = cfsPeriod
		r.CpuQuota = max(lim.MilliValue()*cfsPeriod/1000, minQuota)
	}
	if mem, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = mem.Value()
	}
	return r
}

func allContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)+len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		// EphemeralContainerCommon has exactly Container's fields.
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// merge returns a new map with base's entries overridden by over's.
func merge(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
