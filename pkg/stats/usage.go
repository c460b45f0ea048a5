package stats

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// duTTL is how long a directory's measured usage is reused. Walking log
// and emptyDir directories on every scrape would cost more than the answer
// is worth; upstream measures volumes once a minute.
const duTTL = 30 * time.Second

// diskUsage measures directory trees, caching results for duTTL.
type diskUsage struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]duEntry
}

type duEntry struct {
	bytes, inodes uint64
	at            time.Time
}

func newDiskUsage(now func() time.Time) *diskUsage {
	return &diskUsage{now: now, entries: map[string]duEntry{}}
}

// usage returns the bytes allocated to and the inodes used by the tree at
// dir. A missing directory uses nothing.
func (d *diskUsage) usage(dir string) (bytes, inodes uint64) {
	now := d.now()
	d.mu.Lock()
	e, ok := d.entries[dir]
	d.mu.Unlock()
	if ok && now.Sub(e.at) < duTTL {
		return e.bytes, e.inodes
	}
	e = duEntry{at: now}
	_ = filepath.WalkDir(dir, func(_ string, entry fs.DirEntry, err error) error {
		if err != nil {
			// Files come and go (rotation, GC); count what is there.
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return nil
		}
		e.inodes++
		e.bytes += allocated(info)
		return nil
	})
	d.mu.Lock()
	d.entries[dir] = e
	d.mu.Unlock()
	return e.bytes, e.inodes
}

// forget drops cached entries not used for a while, so directories of
// deleted pods do not stay in memory.
func (d *diskUsage) forget() {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, e := range d.entries {
		if now.Sub(e.at) > 10*duTTL {
			delete(d.entries, k)
		}
	}
}

// allocated is the space a file takes on disk (sparse files count what is
// allocated), falling back to its size.
func allocated(info os.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(max(info.Size(), 0))
}
