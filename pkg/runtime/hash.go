package runtime

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns a stable hash of a container spec. It is stamped on
// every container nodelet creates; a running container whose hash differs
// from its spec's is restarted, and only that one.
func HashContainer(c *v1.Container) uint64 {
	// JSON of the typed struct has a fixed field order, so equal specs hash
	// equally across restarts of nodelet.
	b, _ := json.Marshal(c)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
