// Package runtime holds nodelet's model of what actually runs on the node:
// sandboxes and containers as observed from the container runtime, grouped by
// pod, independent of CRI wire types. Decisions (what to start, kill, restart)
// are made over these types; package runtime/cristatus reads them from what
// the CRI client in runtime/cri returns.
package runtime

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ContainerState is the lifecycle state of one container instance.
type ContainerState string

const (
	ContainerStateCreated ContainerState = "created"
	ContainerStateRunning ContainerState = "running"
	ContainerStateExited  ContainerState = "exited"
	ContainerStateUnknown ContainerState = "unknown"
)

// SandboxState is the state of a pod sandbox.
type SandboxState string

const (
	SandboxStateReady    SandboxState = "ready"
	SandboxStateNotReady SandboxState = "notready"
)

// ContainerStatus is one container instance as the runtime reports it, with
// the identity nodelet stamped on it when it was created.
type ContainerStatus struct {
	ID         string
	Name       string // the container's name in the pod spec
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	Reason     string
	Message    string
	Image      string // image as the runtime names it (a tag, e.g. docker.io/library/busybox:1.35)
	ImageRef   string // resolved image ID / digest
	Hash       uint64 // upstream's spec hash at creation, see HashContainer
	// SpecHash is HashContainerSpec at creation, stamped on static pods'
	// containers only; 0 when absent.
	SpecHash     uint64
	RestartCount int // attempt number: 0 for the first instance
	SandboxID    string
	LogPath      string
	// TerminationGracePeriod is the pod's grace period in seconds when the
	// container was created, so that a container whose pod spec is gone
	// (an orphan) is still stopped with the grace it was promised; nil when
	// unknown.
	TerminationGracePeriod *int64
	// TerminationMessagePath is where the container was told to write its
	// termination message, as stamped at creation.
	TerminationMessagePath string
	// TerminationMessagePolicy is the container's, as stamped at creation
	// (File or FallbackToLogsOnError).
	TerminationMessagePolicy string
	// TerminationMessageFile is the node file mounted at
	// TerminationMessagePath, when the runtime's details of the instance
	// listed its mounts; "" otherwise.
	TerminationMessageFile string
}

// SandboxStatus is one pod sandbox instance.
type SandboxStatus struct {
	ID          string
	State       SandboxState
	CreatedAt   time.Time
	Attempt     uint32
	IP          string
	IPs         []string
	HostNetwork bool
}

// PodStatus is everything the runtime has for one pod UID.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes newest first.
	Sandboxes []*SandboxStatus
	// Containers newest first: for each name, the first entry is the latest
	// instance.
	Containers []*ContainerStatus
}

// LatestSandbox returns the newest sandbox, or nil.
func (s *PodStatus) LatestSandbox() *SandboxStatus {
	if s == nil || len(s.Sandboxes) == 0 {
		return nil
	}
	return s.Sandboxes[0]
}

// LatestContainer returns the newest instance of the named container, or nil.
func (s *PodStatus) LatestContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// PodIP returns the IP of the newest ready sandbox, or "".
func (s *PodStatus) PodIP() string {
	if sb := s.LatestSandbox(); sb != nil && sb.State == SandboxStateReady {
		return sb.IP
	}
	return ""
}

// PodIPs returns the IPs of the newest ready sandbox, the primary first
// (the CRI's ip, then its additional_ips: a dual-stack pod's other family);
// nil when none.
func (s *PodStatus) PodIPs() []string {
	sb := s.LatestSandbox()
	if sb == nil || sb.State != SandboxStateReady {
		return nil
	}
	if len(sb.IPs) > 0 {
		return sb.IPs
	}
	if sb.IP != "" {
		return []string{sb.IP}
	}
	return nil
}

// Pod is a pod as found in the runtime, for housekeeping and relisting: only
// the identity and the IDs of what exists.
type Pod struct {
	UID       types.UID
	Name      string
	Namespace string
	// Source is the config source the pod came from, read back from the
	// sandbox's kubernetes.io/config.source annotation; "" when unknown.
	// Housekeeping only kills leftovers whose source is ready.
	Source     string
	Sandboxes  []SandboxRef
	Containers []ContainerRef
}

// SandboxRef identifies a sandbox and its state.
type SandboxRef struct {
	ID        string
	State     SandboxState
	Attempt   uint32
	CreatedAt time.Time
}

// ContainerRef identifies a container instance and its state.
type ContainerRef struct {
	ID        string
	Name      string
	State     ContainerState
	SandboxID string
	CreatedAt time.Time
}

// ContainerWaiting explains why a container is not running yet, as shown in
// its waiting state (ErrImagePull, ImagePullBackOff, CrashLoopBackOff,
// CreateContainerError, ...).
type ContainerWaiting struct {
	Reason  string
	Message string
}

// SyncResult is what one pass of bringing a pod to its spec did and learned.
type SyncResult struct {
	// Waiting holds, per container name, why it is not running, when known.
	Waiting map[string]ContainerWaiting
	// RetryAfter, when > 0, asks the worker to sync the pod again after that
	// long (crash-loop or image-pull backoff expiring), without waiting for
	// the periodic resync.
	RetryAfter time.Duration
	// Err is the first error that stopped the pass.
	Err error
	// Stopped is the ID of the newest sandbox when the pass stopped the
	// whole pod (its KillPod succeeded): InSync then knows that stop is
	// done. "" when it stopped none.
	Stopped string
}
