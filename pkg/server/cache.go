package server

import (
	"sync"
	"time"
)

// cacheSize bounds each review cache. A node sees few distinct callers (the
// API server, a metrics scraper, a handful of users), so this is generous;
// it only matters against a client cycling through garbage tokens.
const cacheSize = 4096

// cacheEntry is one cached review answer: a value or the error it ended in.
type cacheEntry[V any] struct {
	val V
	err error
}

// ttlCache is a small map of answers that expire. It is deliberately
// simple: when full it drops expired entries, and if that frees nothing it
// starts over, which costs only a few extra reviews.
type ttlCache[V any] struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	entries map[string]ttlItem[V]
}

type ttlItem[V any] struct {
	e       cacheEntry[V]
	expires time.Time
}

func newTTLCache[V any](max int) *ttlCache[V] {
	return &ttlCache[V]{max: max, now: time.Now, entries: map[string]ttlItem[V]{}}
}

func (c *ttlCache[V]) get(key string) (cacheEntry[V], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.entries[key]
	if !ok || !c.now().Before(it.expires) {
		return cacheEntry[V]{}, false
	}
	return it.e, true
}

// put stores e for ttl; a ttl <= 0 stores nothing.
func (c *ttlCache[V]) put(key string, e cacheEntry[V], ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= c.max {
		for k, it := range c.entries {
			if !now.Before(it.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			c.entries = map[string]ttlItem[V]{}
		}
	}
	c.entries[key] = ttlItem[V]{e: e, expires: now.Add(ttl)}
}
