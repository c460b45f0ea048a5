package cgroups

import (
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Drivers, as --cgroup-driver names them.
const (
	DriverCgroupfs = "cgroupfs"
	DriverSystemd  = "systemd"
)

// Names of the node-level cgroups, as upstream names them. Guaranteed pods
// live directly under kubepods.
const (
	podsName       = "kubepods"
	burstableName  = "burstable"
	bestEffortName = "besteffort"
	podPrefix      = "pod"
)

// Name is a cgroup as a driver-neutral list of components from the root,
// e.g. [kubepods burstable pod<uid>]; the driver turns it into a path.
type Name []string

// Child returns the name of the component child of n.
func (n Name) Child(component string) Name {
	out := make(Name, 0, len(n)+1)
	return append(append(out, n...), component)
}

// ParseRoot turns --cgroup-root into a Name for driver: a cgroupfs path
// ("/", "/a/b"), or for systemd a slice ("/", "a-b.slice", or its expanded
// path "/a.slice/a-b.slice"). "" is "/".
func ParseRoot(driver, root string) (Name, error) {
	if root == "" || root == "/" {
		return Name{}, nil
	}
	if !strings.HasPrefix(root, "/") {
		return nil, fmt.Errorf("cgroup root %q must be an absolute path", root)
	}
	switch driver {
	case DriverCgroupfs:
		var n Name
		for _, c := range strings.Split(strings.Trim(path.Clean(root), "/"), "/") {
			if c == "." || c == ".." {
				return nil, fmt.Errorf("cgroup root %q: %q is no cgroup name", root, c)
			}
			n = append(n, c)
		}
		return n, nil
	case DriverSystemd:
		base := path.Base(root)
		if !strings.HasSuffix(base, ".slice") {
			return nil, fmt.Errorf("cgroup root %q: with the systemd driver it must be a slice (*.slice)", root)
		}
		var n Name
		for _, c := range strings.Split(strings.TrimSuffix(base, ".slice"), "-") {
			if c == "" {
				return nil, fmt.Errorf("cgroup root %q: empty slice component", root)
			}
			n = append(n, unescapeSystemd(c))
		}
		return n, nil
	}
	return nil, fmt.Errorf("unknown cgroup driver %q", driver)
}

// CgroupfsPath is n as a cgroupfs path, absolute from the hierarchy's
// root: /kubepods/burstable/pod<uid>.
func CgroupfsPath(n Name) string {
	return "/" + strings.Join(n, "/")
}

// SystemdPath is n as systemd slices, the expanded path of its last slice
// unit: [kubepods burstable pod1-2] is
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice.
// Dashes inside a component separate slice levels in systemd, so they are
// escaped to underscores, as upstream does.
func SystemdPath(n Name) string {
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	unit := ""
	for i, c := range n {
		if i > 0 {
			unit += "-"
		}
		unit += escapeSystemd(c)
		b.WriteString("/" + unit + ".slice")
	}
	return b.String()
}

// SystemdUnit is the slice unit of n: kubepods-burstable-pod1_2.slice.
func SystemdUnit(n Name) string {
	if len(n) == 0 {
		return "-.slice"
	}
	return path.Base(SystemdPath(n))
}

func escapeSystemd(c string) string   { return strings.ReplaceAll(c, "-", "_") }
func unescapeSystemd(c string) string { return strings.ReplaceAll(c, "_", "-") }

// DriverPath is n as driver names it, what the runtime is given as
// CgroupParent.
func DriverPath(driver string, n Name) string {
	if driver == DriverSystemd {
		return SystemdPath(n)
	}
	return CgroupfsPath(n)
}

// PodsName is the kubepods cgroup under root.
func PodsName(root Name) Name { return root.Child(podsName) }

// QOSName is the cgroup the pods of a QoS class live in: kubepods for
// Guaranteed, kubepods/burstable, kubepods/besteffort.
func QOSName(root Name, qos v1.PodQOSClass) Name {
	switch qos {
	case v1.PodQOSBurstable:
		return PodsName(root).Child(burstableName)
	case v1.PodQOSBestEffort:
		return PodsName(root).Child(bestEffortName)
	}
	return PodsName(root)
}

// PodName is the cgroup of the pod uid of class qos: <qos cgroup>/pod<uid>.
func PodName(root Name, qos v1.PodQOSClass, uid types.UID) Name {
	return QOSName(root, qos).Child(podPrefix + string(uid))
}

// PodUIDFromName returns the UID a pod cgroup's last component names
// ("pod<uid>"), or false for anything else (QoS cgroups, container cgroups).
func PodUIDFromName(component string) (types.UID, bool) {
	uid, ok := strings.CutPrefix(component, podPrefix)
	if !ok || uid == "" || !validUID(uid) {
		return "", false
	}
	return types.UID(uid), true
}

// validUID: pod UIDs are UUIDs (static pods get a hash); a cgroup name
// holding anything else (a path separator, dots) is not a pod's.
func validUID(uid string) bool {
	for _, r := range uid {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
