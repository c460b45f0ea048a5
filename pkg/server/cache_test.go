package server

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestReviewCacheGarbageCannotEvictGoodAnswers(t *testing.T) {
	c := newReviewCache[string](CacheOptions{AllowTTL: time.Minute, DenyTTL: time.Minute})
	c.put("good", cacheEntry[string]{val: "alice"})
	bad := errors.New("invalid")
	for i := range 10 * denyCacheSize {
		c.put(fmt.Sprintf("garbage-%d", i), cacheEntry[string]{err: bad})
	}
	if e, ok := c.get("good"); !ok || e.val != "alice" || e.err != nil {
		t.Fatalf("good answer evicted by garbage: %+v %v", e, ok)
	}
	if c.deny.Len() != denyCacheSize {
		t.Errorf("negative cache holds %d, want its bound %d", c.deny.Len(), denyCacheSize)
	}
	if _, ok := c.get(fmt.Sprintf("garbage-%d", 10*denyCacheSize-1)); !ok {
		t.Error("the newest negative answer is not cached")
	}
	if _, ok := c.get("garbage-0"); ok {
		t.Error("the oldest negative answer was not evicted")
	}
}

func TestReviewCacheExpiryAndKinds(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newReviewCache[string](CacheOptions{AllowTTL: time.Minute, DenyTTL: 10 * time.Second})
	c.now = func() time.Time { return now }
	denied := cacheEntry[string]{val: "no", err: ErrForbidden}

	c.put("k", denied)
	if e, ok := c.get("k"); !ok || e.err == nil {
		t.Fatalf("negative answer: %+v %v", e, ok)
	}
	now = now.Add(10 * time.Second)
	if _, ok := c.get("k"); ok {
		t.Fatal("negative answer outlived its TTL")
	}
	c.put("k", cacheEntry[string]{val: "yes"})
	now = now.Add(59 * time.Second)
	if e, ok := c.get("k"); !ok || e.err != nil {
		t.Fatalf("positive answer: %+v %v", e, ok)
	}
	// An answer replaces the other kind's for the same key.
	c.put("k", denied)
	if e, ok := c.get("k"); !ok || e.err == nil {
		t.Fatalf("a newer denial did not replace the allowance: %+v %v", e, ok)
	}
	now = now.Add(time.Hour)
	if _, ok := c.get("k"); ok {
		t.Fatal("answer outlived its TTL")
	}

	off := newReviewCache[string](CacheOptions{})
	off.put("k", cacheEntry[string]{val: "yes"})
	if _, ok := off.get("k"); ok {
		t.Error("zero TTL cached an answer")
	}
}

func TestReviewCacheIsLRU(t *testing.T) {
	c := newReviewCache[int](CacheOptions{AllowTTL: time.Hour})
	for i := range allowCacheSize {
		c.put(fmt.Sprint(i), cacheEntry[int]{val: i})
	}
	c.get("0") // recently used: survives the next insertion
	c.put("new", cacheEntry[int]{val: -1})
	if _, ok := c.get("0"); !ok {
		t.Error("recently used entry evicted")
	}
	if _, ok := c.get("1"); ok {
		t.Error("least recently used entry kept")
	}
}

func TestTokenCacheOptions(t *testing.T) {
	for ttl, want := range map[time.Duration]CacheOptions{
		2 * time.Minute: {AllowTTL: 2 * time.Minute, DenyTTL: 10 * time.Second},
		5 * time.Second: {AllowTTL: 5 * time.Second, DenyTTL: 5 * time.Second},
		0:               {},
	} {
		if got := TokenCacheOptions(ttl); got != want {
			t.Errorf("TokenCacheOptions(%s) = %+v, want %+v", ttl, got, want)
		}
	}
}
