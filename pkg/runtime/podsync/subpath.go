package podsync

import (
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/volumes/subpath"
)

// bindSubpath is the node's cri.SubpathBinder: the subPath is opened beneath
// its volume and what was opened is bind-mounted at the target. The binds are
// unmounted with the pod's directory (package volumes/cleanup).
func bindSubpath(m cri.SubpathMount) error {
	return subpath.Bind(subpath.Request{VolumePath: m.VolumePath, Path: m.Path, Target: m.Target})
}
