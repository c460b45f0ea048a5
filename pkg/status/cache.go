package status

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Cache holds the latest generated status of every pod on the node. Workers
// write it; /pods and the API status sync read it.
type Cache struct {
	mu       sync.RWMutex
	statuses map[types.UID]v1.PodStatus
	// version counts real changes: a worker re-setting an equal status
	// (every resync does) must not make /pods re-render all pods.
	version uint64
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{statuses: map[types.UID]v1.PodStatus{}} }

// Get returns the status of uid.
func (c *Cache) Get(uid types.UID) (v1.PodStatus, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.statuses[uid]
	return s, ok
}

// Set stores the status of uid.
func (c *Cache) Set(uid types.UID, s v1.PodStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.statuses[uid]; ok && apiequality.Semantic.DeepEqual(old, s) {
		return
	}
	c.statuses[uid] = s
	c.version++
}

// Delete forgets uid.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.statuses[uid]; ok {
		delete(c.statuses, uid)
		c.version++
	}
}

// Version changes (grows) whenever a status is added, changed or removed.
func (c *Cache) Version() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.version
}
