package pod

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager is the node's index of desired pods and of the mirror pods the API
// server holds for the static ones. Static and mirror pods share a full name;
// that is how one is found from the other.
//
// Safe for concurrent use: readers (API handlers, housekeeping) and the sync
// loop (the only writer) meet at mu.
type Manager struct {
	mu               sync.RWMutex
	byUID            map[types.UID]*v1.Pod
	byFullName       map[string]*v1.Pod
	mirrorByUID      map[types.UID]*v1.Pod
	mirrorByFullName map[string]*v1.Pod
	// version counts changes, so readers that render all pods (/pods) can
	// tell that nothing changed since they last did and reuse their output.
	version uint64
}

// NewManager returns an empty Manager.
func NewManager() *Manager {
	return &Manager{
		byUID:            map[types.UID]*v1.Pod{},
		byFullName:       map[string]*v1.Pod{},
		mirrorByUID:      map[types.UID]*v1.Pod{},
		mirrorByFullName: map[string]*v1.Pod{},
	}
}

// SetPods replaces the whole content with pods (regular, static and mirror).
func (m *Manager) SetPods(pods []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version++
	m.byUID = map[types.UID]*v1.Pod{}
	m.byFullName = map[string]*v1.Pod{}
	m.mirrorByUID = map[types.UID]*v1.Pod{}
	m.mirrorByFullName = map[string]*v1.Pod{}
	for _, p := range pods {
		m.upsertLocked(p)
	}
}

// AddOrUpdatePod inserts p or replaces the pod with the same UID.
func (m *Manager) AddOrUpdatePod(p *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.upsertLocked(p)
}

func (m *Manager) upsertLocked(p *v1.Pod) {
	m.version++
	if IsMirror(p) {
		// A re-created mirror gets a new UID under the same full name; drop
		// the stale UID entry so lookups by it stop resolving.
		if old, ok := m.mirrorByFullName[FullName(p)]; ok && old.UID != p.UID {
			delete(m.mirrorByUID, old.UID)
		}
		m.mirrorByUID[p.UID] = p
		m.mirrorByFullName[FullName(p)] = p
		return
	}
	if old, ok := m.byFullName[FullName(p)]; ok && old.UID != p.UID {
		delete(m.byUID, old.UID)
	}
	m.byUID[p.UID] = p
	m.byFullName[FullName(p)] = p
}

// RemovePod forgets p (matched by UID, regular or mirror).
func (m *Manager) RemovePod(p *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version++
	if IsMirror(p) {
		if cur, ok := m.mirrorByUID[p.UID]; ok {
			delete(m.mirrorByUID, p.UID)
			if m.mirrorByFullName[FullName(cur)] == cur {
				delete(m.mirrorByFullName, FullName(cur))
			}
		}
		return
	}
	if cur, ok := m.byUID[p.UID]; ok {
		delete(m.byUID, p.UID)
		if m.byFullName[FullName(cur)] == cur {
			delete(m.byFullName, FullName(cur))
		}
	}
}

// Version changes (grows) with every change to the pods or mirror pods.
func (m *Manager) Version() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// Pods returns the regular and static pods, without mirrors.
func (m *Manager) Pods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(m.byUID))
	for _, p := range m.byUID {
		out = append(out, p)
	}
	return out
}

// MirrorPods returns all mirror pods.
func (m *Manager) MirrorPods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(m.mirrorByUID))
	for _, p := range m.mirrorByUID {
		out = append(out, p)
	}
	return out
}

// PodByUID returns the regular or static pod with that UID.
func (m *Manager) PodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byUID[uid]
	return p, ok
}

// PodByFullName returns the regular or static pod with that name.
func (m *Manager) PodByFullName(name, namespace string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byFullName[BuildFullName(name, namespace)]
	return p, ok
}

// MirrorPodByUID returns the mirror pod with that UID.
func (m *Manager) MirrorPodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.mirrorByUID[uid]
	return p, ok
}

// MirrorPodOf returns the mirror pod of a static pod.
func (m *Manager) MirrorPodOf(static *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.mirrorByFullName[FullName(static)]
	return p, ok
}

// StaticPodOf returns the static pod a mirror pod stands for.
func (m *Manager) StaticPodOf(mirror *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byFullName[FullName(mirror)]
	if !ok || !IsStatic(p) {
		return nil, false
	}
	return p, true
}

// ResolveUID maps a mirror pod's UID to its static pod's UID; any other UID
// is returned unchanged. API callers (stats, logs) may name either.
func (m *Manager) ResolveUID(uid types.UID) types.UID {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mirror, ok := m.mirrorByUID[uid]
	if !ok {
		return uid
	}
	if p, ok := m.byFullName[FullName(mirror)]; ok && IsStatic(p) {
		return p.UID
	}
	return uid
}

// MirrorUIDOf maps a static pod's UID to its mirror pod's UID, if a mirror
// exists.
func (m *Manager) MirrorUIDOf(uid types.UID) (types.UID, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byUID[uid]
	if !ok || !IsStatic(p) {
		return "", false
	}
	mirror, ok := m.mirrorByFullName[FullName(p)]
	if !ok {
		return "", false
	}
	return mirror.UID, true
}

// OrphanedMirrorPods returns the mirror pods whose static pod is gone.
func (m *Manager) OrphanedMirrorPods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*v1.Pod
	for name, mirror := range m.mirrorByFullName {
		if p, ok := m.byFullName[name]; !ok || !IsStatic(p) {
			out = append(out, mirror)
		}
	}
	return out
}
