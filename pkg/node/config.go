package node

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/eviction"
)

// Defaults as upstream.
const (
	DefaultStatusUpdateFrequency = 10 * time.Second
	// DefaultStatusReportFrequency is how often an unchanged status is still
	// patched: the Lease is the heartbeat, so this can be slow.
	DefaultStatusReportFrequency = 5 * time.Minute
	DefaultLeaseDurationSeconds  = 40
	// LeaseNamespace holds one Lease per node.
	LeaseNamespace = "kube-node-lease"
)

// Config is the node's identity and how often it reports. It comes from
// flags; Validate fills the zero values with the defaults.
type Config struct {
	// NodeName is the Node object's name (--hostname-override or hostname).
	NodeName string
	// Hostname is the kubernetes.io/hostname label and the Hostname address;
	// empty means NodeName.
	Hostname string
	// NodeIPs become InternalIP addresses, the first one first (--node-ip,
	// or the detected host IP).
	NodeIPs []string
	// Labels are --node-labels, set when the Node is created.
	Labels map[string]string
	// Taints are --register-with-taints, set when the Node is created (as
	// upstream, never re-applied to an existing Node).
	Taints []v1.Taint
	// NodeIPGiven says NodeIPs come from --node-ip, not from detection.
	// With an external cloud provider only a given IP is reported (and
	// announced in the provided-node-ip annotation); the provider sets the
	// addresses otherwise.
	NodeIPGiven bool
	// ExternalCloudProvider is --cloud-provider=external: the Node is
	// registered with the uninitialized taint, which the cloud controller
	// manager removes once it has initialised the Node, and the addresses
	// it sets are kept.
	ExternalCloudProvider bool
	// ProviderID is --provider-id / providerID: spec.providerID of the Node
	// nodelet creates.
	ProviderID string
	// RegisterNode is --register-node: create the Node when it is missing.
	// Without it nodelet only reports status on a Node someone else made.
	RegisterNode bool
	// StatusUpdateFrequency is how often the status is computed and, when it
	// changed, patched (--node-status-update-frequency).
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often the status is patched even when
	// nothing changed.
	StatusReportFrequency time.Duration
	// LeaseDurationSeconds is --node-lease-duration-seconds; the Lease is
	// renewed every quarter of it.
	LeaseDurationSeconds int32
	// MaxPods is the pods capacity (--max-pods).
	MaxPods int
	// KubeletPort is status.daemonEndpoints.kubeletEndpoint.port (--port):
	// where the API server reaches nodelet for logs and exec.
	KubeletPort int32
	// Version is reported as nodeInfo.kubeletVersion: the Kubernetes
	// release nodelet implements with nodelet's own version as build
	// metadata (pkg/version), which the version skew checks accept.
	Version string
	// OS and Arch are runtime.GOOS and runtime.GOARCH unless set (tests).
	OS, Arch string
	// Reserved is --kube-reserved plus --system-reserved, taken out of
	// allocatable (cpu, memory, ephemeral-storage; pid is not reported).
	Reserved v1.ResourceList
	// HardEviction are the --eviction-hard thresholds: memory.available
	// and nodefs.available are taken out of allocatable as well, and
	// memory.available is the MemoryPressure threshold. nil means
	// upstream's defaults; an empty, non-nil list means none.
	HardEviction []eviction.Threshold
}

// withDefaults validates c and returns it with zero values defaulted.
func (c Config) withDefaults() (Config, error) {
	if c.NodeName == "" {
		return c, errors.New("node: no node name")
	}
	if c.Hostname == "" {
		c.Hostname = c.NodeName
	}
	if c.StatusUpdateFrequency <= 0 {
		c.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if c.StatusReportFrequency <= 0 {
		c.StatusReportFrequency = DefaultStatusReportFrequency
	}
	if c.LeaseDurationSeconds <= 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.MaxPods < 0 {
		return c, fmt.Errorf("node: max pods %d is negative", c.MaxPods)
	}
	if c.OS == "" {
		c.OS = runtime.GOOS
	}
	if c.Arch == "" {
		c.Arch = runtime.GOARCH
	}
	return c, nil
}

// RenewInterval is how often the Lease is renewed: a quarter of its
// duration, as upstream, so three renewals may fail before it expires.
func (c Config) RenewInterval() time.Duration {
	return time.Duration(c.LeaseDurationSeconds) * time.Second / 4
}

// callTimeout bounds each API call of the heartbeat (status, Lease) as
// upstream bounds its heartbeat client: a hung connection must not stall
// the loop past its next period, nor past the Lease's expiry.
func (c Config) callTimeout() time.Duration {
	return min(c.StatusUpdateFrequency, time.Duration(c.LeaseDurationSeconds)*time.Second)
}
