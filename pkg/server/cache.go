package server

import (
	"time"

	"k8s.io/utils/lru"
)

// Sizes of the review caches. A node sees few distinct callers (the API
// server, a metrics scraper, a handful of users), so the positive cache is
// generous. Negative answers live in their own, smaller LRU: a client
// cycling through garbage tokens only evicts other garbage, never the
// answers legitimate callers depend on.
const (
	allowCacheSize = 4096
	denyCacheSize  = 1024
)

// cacheEntry is one cached review answer: a value, and for a negative
// answer the error it ended in.
type cacheEntry[V any] struct {
	val V
	err error
}

type cacheItem[V any] struct {
	e       cacheEntry[V]
	expires time.Time
}

// reviewCache keeps TokenReview and SubjectAccessReview answers for their
// TTL, positive and negative ones in separate LRUs (see denyCacheSize).
type reviewCache[V any] struct {
	opts        CacheOptions
	now         func() time.Time
	allow, deny *lru.Cache
}

func newReviewCache[V any](opts CacheOptions) *reviewCache[V] {
	return &reviewCache[V]{opts: opts, now: time.Now, allow: lru.New(allowCacheSize), deny: lru.New(denyCacheSize)}
}

// get returns the unexpired answer for key.
func (c *reviewCache[V]) get(key string) (cacheEntry[V], bool) {
	now := c.now()
	for _, l := range []*lru.Cache{c.allow, c.deny} {
		v, ok := l.Get(key)
		if !ok {
			continue
		}
		it := v.(cacheItem[V])
		if now.Before(it.expires) {
			return it.e, true
		}
		l.Remove(key)
	}
	return cacheEntry[V]{}, false
}

// put stores e, positive when e.err is nil, for the TTL of its kind; a TTL
// <= 0 stores nothing.
func (c *reviewCache[V]) put(key string, e cacheEntry[V]) {
	l, other, ttl := c.allow, c.deny, c.opts.AllowTTL
	if e.err != nil {
		l, other, ttl = c.deny, c.allow, c.opts.DenyTTL
	}
	other.Remove(key)
	if ttl <= 0 {
		return
	}
	l.Add(key, cacheItem[V]{e: e, expires: c.now().Add(ttl)})
}
