package podsync

import (
	"fmt"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
	"github.com/nodelet/nodelet/pkg/volumes/subpath"
)

// bindSubpaths binds a container's subPath mounts (criconfig.ContainerConfig)
// before it is created; a bind that fails fails its config.
func (s *Syncer) bindSubpaths(container string, binds []criconfig.SubpathMount) error {
	for _, m := range binds {
		if err := s.opts.BindSubpath(m); err != nil {
			return fmt.Errorf("container %q: volume mount %q: %w", container, m.Mount, err)
		}
	}
	return nil
}

// bindSubpath is the node's subPath binder: the subPath is opened beneath
// its volume and what was opened is bind-mounted at the target. The binds are
// unmounted with the pod's directory (package volumes/cleanup).
func bindSubpath(m criconfig.SubpathMount) error {
	return subpath.Bind(subpath.Request{VolumePath: m.VolumePath, Path: m.Path, Target: m.Target})
}
