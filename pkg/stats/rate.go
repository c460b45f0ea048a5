package stats

import (
	"sync"
	"time"
)

// cpuRates turns cumulative CPU usage into a rate (usageNanoCores) from the
// previous sample of the same key. The runtime computes its own rate too,
// but only from its own previous call, which may be someone else's; ours
// is from our previous summary.
type cpuRates struct {
	mu   sync.Mutex
	last map[string]cpuSample
}

type cpuSample struct {
	at      time.Time
	usage   uint64
	seen    time.Time
	rate    uint64
	hasRate bool
}

func newCPURates() *cpuRates { return &cpuRates{last: map[string]cpuSample{}} }

// rate records (at, usage) for key and returns the rate since the previous
// sample, or ok=false on the first sample, when time did not advance, or
// when the counter went back (a restarted container under a reused key).
func (c *cpuRates) rate(key string, at time.Time, usage uint64) (nanoCores uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, had := c.last[key]
	if had && !at.After(prev.at) {
		// The same sample as last time (the runtime caches stats for a
		// moment): the same answer.
		prev.seen = time.Now()
		c.last[key] = prev
		return prev.rate, prev.hasRate
	}
	cur := cpuSample{at: at, usage: usage, seen: time.Now()}
	if had && usage >= prev.usage {
		cur.rate = uint64(float64(usage-prev.usage) / at.Sub(prev.at).Seconds())
		cur.hasRate = true
	}
	c.last[key] = cur
	return cur.rate, cur.hasRate
}

// forget drops keys not sampled for a while (containers that are gone).
func (c *cpuRates) forget(olderThan time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.last {
		if time.Since(s.seen) > olderThan {
			delete(c.last, k)
		}
	}
}
