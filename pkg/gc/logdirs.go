package gc

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// PodUIDFromLogDir returns the pod UID of a pod log directory name,
// <namespace>_<name>_<uid> (the layout of /var/log/pods), or "".
func PodUIDFromLogDir(name string) types.UID {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[2] == "" {
		return ""
	}
	return types.UID(parts[2])
}

// PlanPodLogDirs returns the pod log directories (names, sorted) to remove:
// those of pods that are not wanted and have nothing left in the runtime
// (present reports whether a pod still has a container or sandbox). A nil
// podWanted removes nothing.
func PlanPodLogDirs(dirs []string, podWanted func(types.UID) bool, present func(types.UID) bool) []string {
	if podWanted == nil {
		return nil
	}
	var out []string
	for _, d := range dirs {
		uid := PodUIDFromLogDir(d)
		if uid == "" || podWanted(uid) || present(uid) {
			continue
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
