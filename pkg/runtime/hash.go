package runtime

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns the hash the upstream kubelet stamps on a container
// (annotation io.kubernetes.container.hash) and compares with its spec: a
// running container whose hash differs is restarted. It covers only what
// the API lets change on a running pod's container, its name and image, so
// a field that a newer API server or a newer k8s.io/api defaults restarts
// nothing, and containers the upstream kubelet created hash the same here
// (and the reverse), which is what lets either agent take over the node
// without restarting a container.
//
// The value is upstream's, byte for byte: the JSON of {"image","name"}
// (encoding/json: sorted keys, HTML characters escaped), written as the
// spew library prints a []byte with "%#v" ("([]uint8)[123 34 ...]"),
// hashed with 32-bit FNV-1a.
func HashContainer(c *v1.Container) uint64 {
	// A map, not a struct: its keys are marshalled sorted, as upstream's.
	b, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	h := fnv.New32a()
	_, _ = h.Write(spewBytes(b))
	return uint64(h.Sum32())
}

// spewBytes is b as spew's "%#v" prints a []byte: the type in parentheses,
// then the bytes in decimal, space-separated, in brackets.
func spewBytes(b []byte) []byte {
	out := make([]byte, 0, len("([]uint8)[]")+4*len(b))
	out = append(out, "([]uint8)["...)
	for i, c := range b {
		if i > 0 {
			out = append(out, ' ')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return append(out, ']')
}

// HashContainerSpec hashes a container's whole spec. nodelet stamps it on
// the containers of static pods only (cri.AnnotationContainerSpecHash):
// their UID does not change when the manifest is edited, so this is how an
// edit of any field of a container restarts that container. API pods need
// no such hash: the API server lets only the image of a running pod's
// container change, which HashContainer covers. It was also nodelet's
// container hash before it took upstream's, so plan recognises containers
// an older nodelet made.
func HashContainerSpec(c *v1.Container) uint64 {
	// JSON of the typed struct has a fixed field order, so equal specs hash
	// equally across restarts of nodelet.
	b, _ := json.Marshal(c)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
