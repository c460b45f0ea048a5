package gc

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// Container is one container instance of the node, in any state.
type Container struct {
	ID        string
	PodUID    types.UID
	Name      string // container name in the pod spec
	SandboxID string
	State     runtime.ContainerState
	Attempt   uint32
	CreatedAt time.Time
	// FinishedAt is when it exited; zero when unknown.
	FinishedAt time.Time
}

// Dead reports whether the container is not running: exited, created but
// never started, or in an unknown state.
func (c Container) Dead() bool { return c.State != runtime.ContainerStateRunning }

// Sandbox is one pod sandbox of the node.
type Sandbox struct {
	ID        string
	PodUID    types.UID
	State     runtime.SandboxState
	Attempt   uint32
	CreatedAt time.Time
}

// Plan is what PlanContainerGC decided to remove.
type Plan struct {
	// Containers to remove, oldest (by creation) first.
	Containers []Container
	// Sandboxes to remove, oldest first. They hold no container once
	// Containers are removed.
	Sandboxes []Sandbox
}

// unit is the group within which dead instances are counted.
type unit struct {
	uid  types.UID
	name string
}

// PlanContainerGC decides which dead containers and sandboxes to remove.
//
// Containers: only dead containers at least policy.MinAge old are
// candidates. All candidates of pods that are not wanted go. Of each
// (pod, container name) of wanted pods, the newest MaxPerPodContainer
// candidates are kept. If more than MaxContainers candidates remain on the
// node, the oldest (by creation) go until MaxContainers remain, the last dead
// instance of each (pod, container name) only after all older instances.
//
// Sandboxes: a sandbox is removed when it is not ready, holds no container
// that stays, and either its pod is not wanted or it is not the newest
// sandbox of its pod.
//
// A nil podWanted wants every pod (use it until all pod sources are ready, so
// nothing is mistaken for removed). Order: newest means higher attempt, then
// later creation, then greater ID; the result does not depend on input order.
func PlanContainerGC(containers []Container, sandboxes []Sandbox, podWanted func(types.UID) bool, policy Policy, now time.Time) Plan {
	wanted := func(uid types.UID) bool { return podWanted == nil || podWanted(uid) }

	units := map[unit][]Container{}
	for _, c := range containers {
		if !c.Dead() || now.Sub(age(c)) < policy.MinAge {
			continue
		}
		k := unit{c.PodUID, c.Name}
		units[k] = append(units[k], c)
	}
	var remove []Container
	for k, cs := range units {
		slices.SortFunc(cs, newestContainerFirst)
		units[k] = cs
		if !wanted(k.uid) {
			remove = append(remove, cs...)
			delete(units, k)
		}
	}
	if policy.MaxPerPodContainer >= 0 {
		remove = append(remove, keepNewest(units, policy.MaxPerPodContainer)...)
	}
	if policy.MaxContainers >= 0 {
		remove = append(remove, overCap(units, policy.MaxContainers)...)
	}
	slices.SortFunc(remove, olderFirst)

	removed := make(map[string]bool, len(remove))
	for _, c := range remove {
		removed[c.ID] = true
	}
	occupied := map[string]bool{} // sandbox ID -> holds a container that stays
	for _, c := range containers {
		if !removed[c.ID] {
			occupied[c.SandboxID] = true
		}
	}
	byPod := map[types.UID][]Sandbox{}
	for _, s := range sandboxes {
		byPod[s.PodUID] = append(byPod[s.PodUID], s)
	}
	var removeSandboxes []Sandbox
	for uid, ss := range byPod {
		slices.SortFunc(ss, newestSandboxFirst)
		if wanted(uid) {
			ss = ss[1:] // the newest sandbox of a wanted pod stays
		}
		for _, s := range ss {
			if s.State != runtime.SandboxStateReady && !occupied[s.ID] {
				removeSandboxes = append(removeSandboxes, s)
			}
		}
	}
	slices.SortFunc(removeSandboxes, func(a, b Sandbox) int { return newestSandboxFirst(b, a) })
	return Plan{Containers: remove, Sandboxes: removeSandboxes}
}

// age is the time a dead container's age counts from.
func age(c Container) time.Time {
	if !c.FinishedAt.IsZero() {
		return c.FinishedAt
	}
	return c.CreatedAt
}

// keepNewest cuts every unit to its newest n and returns what it cut.
func keepNewest(units map[unit][]Container, n int) []Container {
	var cut []Container
	for k, cs := range units {
		if len(cs) > n {
			cut = append(cut, cs[n:]...)
			units[k] = cs[:n]
		}
	}
	return cut
}

// overCap returns the containers to remove so that at most max remain:
// oldest first, but the newest instance of each unit only once no older
// instance is left anywhere. Each unit is sorted newest first.
func overCap(units map[unit][]Container, limit int) []Container {
	var older, last []Container
	for _, cs := range units {
		if len(cs) == 0 {
			continue
		}
		last = append(last, cs[0])
		older = append(older, cs[1:]...)
	}
	excess := len(older) + len(last) - limit
	if excess <= 0 {
		return nil
	}
	slices.SortFunc(older, olderFirst)
	slices.SortFunc(last, olderFirst)
	return append(older, last...)[:excess]
}

func newestContainerFirst(a, b Container) int {
	if c := cmp.Compare(b.Attempt, a.Attempt); c != 0 {
		return c
	}
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// olderFirst orders containers of different pods: earlier creation first,
// then ID.
func olderFirst(a, b Container) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

func newestSandboxFirst(a, b Sandbox) int {
	if c := cmp.Compare(b.Attempt, a.Attempt); c != 0 {
		return c
	}
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}
