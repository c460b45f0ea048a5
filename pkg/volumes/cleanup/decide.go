package cleanup

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nodelet/nodelet/pkg/layout"
)

// Mount is the part of a mountinfo entry the decision needs.
type Mount struct {
	// Point is the mount point, absolute and with symlinks resolved.
	Point string
	// FSType is the filesystem type ("tmpfs", "ext4", ...).
	FSType string
	// Source is the mount source, for messages.
	Source string
}

// Refusal is a mount point under the directory that nodelet does not own
// and therefore leaves mounted, with the reason.
type Refusal struct {
	Mount  Mount
	Reason string
}

// Plan is what to do with the mounts under a directory before removing it.
type Plan struct {
	// Unmount lists nodelet's own mount points, deepest first; a point
	// with stacked mounts appears once per mount.
	Unmount []string
	// Refused are the mount points nodelet leaves alone: nothing at or
	// below them is removed.
	Refused []Refusal
}

// Directory layout of a pod directory that nodelet (like upstream) mounts on.
const (
	volumesDir       = layout.VolumesDirName
	volumePluginPfx  = layout.PluginPrefix
	volumeSubpaths   = layout.SubpathsDirName
	reasonForeign    = "not a mount nodelet makes"
	reasonHoldsOther = "holds a mount nodelet does not own"
	reasonUnderOther = "inside a mount nodelet does not own"
	reasonStacked    = "shares its mount point with a mount nodelet does not own"
)

// Decide sorts the mounts at or below dir into nodelet's own, to unmount,
// and the rest, to leave alone. Nodelet's own mounts are the tmpfs of a
// volume (<dir>/volumes/kubernetes.io~<plugin>/<name>), the bind mounts of
// persistent volumes (<dir>/volumes/kubernetes.io~local-volume/<name>) and
// the bind mounts of subPaths (<dir>/volume-subpaths/...). Unmounting never loses data, but a
// mount nodelet did not make may still be in use by whoever made it (another
// kubelet's CSI driver, an operator), so it is refused rather than detached.
// A mount of nodelet's inside a refused one, or holding one, is refused too:
// reaching or detaching it would mean touching the foreign mount. mounts
// outside dir are ignored; dir must be clean and absolute.
func Decide(dir string, mounts []Mount) Plan {
	type entry struct {
		m     Mount
		rel   []string
		owned bool
	}
	var under []entry
	for _, m := range mounts {
		rel, ok := relParts(dir, m.Point)
		if !ok {
			continue
		}
		under = append(under, entry{m: m, rel: rel, owned: owned(rel, m.FSType)})
	}
	// A mount point is refused if any mount stacked on it, or on any point
	// above or below it within dir, is foreign.
	foreign := map[string]bool{}
	for _, e := range under {
		if !e.owned {
			foreign[e.m.Point] = true
		}
	}
	reason := func(e entry) string {
		if !e.owned {
			return reasonForeign
		}
		if foreign[e.m.Point] {
			return reasonStacked
		}
		for p := range foreign {
			if within(p, e.m.Point) {
				return reasonUnderOther
			}
			if within(e.m.Point, p) {
				return reasonHoldsOther
			}
		}
		return ""
	}
	var plan Plan
	refused := map[string]bool{}
	for _, e := range under {
		if r := reason(e); r != "" {
			if !refused[e.m.Point] {
				refused[e.m.Point] = true
				plan.Refused = append(plan.Refused, Refusal{Mount: e.m, Reason: r})
			}
			continue
		}
		plan.Unmount = append(plan.Unmount, e.m.Point)
	}
	// Deepest first, so a mount is never detached from under another;
	// stacked mounts keep their order (the table lists the top one last,
	// and each unmount removes the top one, so the count is what matters).
	slices.SortStableFunc(plan.Unmount, func(a, b string) int {
		return cmp.Compare(depth(b), depth(a))
	})
	slices.SortFunc(plan.Refused, func(a, b Refusal) int { return strings.Compare(a.Mount.Point, b.Mount.Point) })
	return plan
}

// owned reports whether a mount at rel (the path below the pod dir, split)
// is one nodelet makes.
func owned(rel []string, fsType string) bool {
	switch {
	case len(rel) == 3 && rel[0] == volumesDir && rel[1] == volumePluginPfx+layout.PluginLocalVolume:
		// The bind mount of a persistent volume (any filesystem):
		// unmounting it leaves the volume's data where it is.
		return true
	case len(rel) == 3 && rel[0] == volumesDir && strings.HasPrefix(rel[1], volumePluginPfx) &&
		len(rel[1]) > len(volumePluginPfx):
		return fsType == "tmpfs"
	case len(rel) >= 2 && rel[0] == volumeSubpaths:
		return true
	}
	return false
}

// relParts returns p's components below dir, or false when p is not below
// dir. dir itself is below dir, with no components: a mount on the pod
// directory itself is foreign.
func relParts(dir, p string) ([]string, bool) {
	if p == dir {
		return nil, true
	}
	if !within(dir, p) {
		return nil, false
	}
	return strings.Split(strings.TrimPrefix(p, dir+string(filepath.Separator)), string(filepath.Separator)), true
}

// within reports whether p is strictly below dir.
func within(dir, p string) bool {
	if dir == string(filepath.Separator) {
		return p != dir && strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

func depth(p string) int { return strings.Count(p, string(filepath.Separator)) }
