package images

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// usage is the Manager's bookkeeping for one image.
type usage struct {
	firstSeen time.Time
	lastUsed  time.Time
}

// detection is one look at the runtime: the images and which are in use and
// pinned.
type detection struct {
	images []*runtimeapi.Image
	inUse  map[string]bool // image ID -> used by a container or wanted
	pinned map[string]bool // image ID -> pinned
}

// detect works out which images are in use (by any existing container, in
// any state, or named in wanted) and pinned (by the runtime, or because it is
// the sandbox image).
func detect(images []*runtimeapi.Image, containers []*runtimeapi.Container, wanted []string, sandboxImage string) detection {
	idx := newRefIndex(images)
	d := detection{images: images, inUse: map[string]bool{}, pinned: map[string]bool{}}
	for _, c := range containers {
		// ImageRef is the resolved image (containerd: the image ID); Image is
		// what the container was created with (name or ID). Either counts.
		for _, ref := range []string{c.GetImageRef(), c.GetImage().GetImage(), c.GetImage().GetUserSpecifiedImage()} {
			if id := idx.lookup(ref); id != "" {
				d.inUse[id] = true
			}
		}
	}
	for _, ref := range wanted {
		if id := idx.lookup(ref); id != "" {
			d.inUse[id] = true
		}
	}
	sandboxID := idx.lookup(sandboxImage)
	for _, img := range images {
		if img.GetPinned() || (sandboxID != "" && img.GetId() == sandboxID) {
			d.pinned[img.GetId()] = true
		}
	}
	return d
}

// observe folds a detection into the bookkeeping at now and returns the new
// bookkeeping and the records to plan over: an image seen for the first time
// is first seen now, an image in use is last used now, an image that is gone
// is forgotten.
func observe(prev map[string]usage, d detection, now time.Time) (map[string]usage, []ImageRecord) {
	next := make(map[string]usage, len(d.images))
	records := make([]ImageRecord, 0, len(d.images))
	for _, img := range d.images {
		id := img.GetId()
		u, ok := prev[id]
		if !ok {
			u.firstSeen = now
		}
		if d.inUse[id] {
			u.lastUsed = now
		}
		next[id] = u
		records = append(records, ImageRecord{
			ID:        id,
			Size:      img.GetSize(),
			FirstSeen: u.firstSeen,
			LastUsed:  u.lastUsed,
			Pinned:    d.pinned[id],
			InUse:     d.inUse[id],
		})
	}
	return next, records
}
