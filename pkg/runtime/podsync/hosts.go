package podsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// nodeHostsFile is the node's hosts file, what host-network pods see.
const nodeHostsFile = "/etc/hosts"

// writeEtcHosts writes the pod's managed hosts file before its containers
// are created, as upstream's kubelet does, and returns the pod IPs it
// needed (nil for host-network pods). Without a root dir, or for a pod
// whose sandbox has no IP, /etc/hosts stays the runtime's and file is "".
func (p *podSync) writeEtcHosts(ctx context.Context, created bool, sandboxID string) (file string, podIPs []string, err error) {
	s, pod := p.s, p.pod
	root := s.opts.Config.RootDir
	if root == "" {
		return "", nil, nil
	}
	var nodeHosts []byte
	if pod.Spec.HostNetwork {
		if nodeHosts, err = os.ReadFile(nodeHostsFile); err != nil {
			return "", nil, fmt.Errorf("read the node's hosts file: %w", err)
		}
	} else {
		if podIPs, err = p.podIPs(ctx, created, sandboxID); err != nil {
			return "", nil, err
		}
		if len(podIPs) == 0 {
			return "", podIPs, nil
		}
	}
	file = layout.EtcHostsFile(root, pod.UID)
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		return "", nil, fmt.Errorf("write hosts file: %w", err)
	}
	content, err := criconfig.HostsFile(pod, podIPs, nodeHosts, s.opts.Config.ClusterDomain)
	if err != nil {
		return "", nil, fmt.Errorf("%w: hosts file: %w", ErrCreateContainerConfig, err)
	}
	if old, err := os.ReadFile(file); err == nil && string(old) == string(content) {
		return file, podIPs, nil
	}
	// In place: running containers have the file bind-mounted and see the
	// update; a rename would leave them the old inode.
	if err := os.WriteFile(file, content, 0o644); err != nil {
		return "", nil, fmt.Errorf("write hosts file: %w", err)
	}
	return file, podIPs, nil
}
