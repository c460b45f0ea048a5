package images

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// normalizeRef brings an image reference to the fully qualified form the
// runtime lists (docker.io/library/busybox:latest for busybox). IDs and
// digests are returned as they are, except that a bare 64-hex ID gets its
// "sha256:" prefix.
func normalizeRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "sha256:") {
		return ref
	}
	if isHex64(ref) {
		return "sha256:" + ref
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
	}
	first, _, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	switch {
	case hasDigest:
		return name + "@" + digest
	case tag != "":
		return name + ":" + tag
	default:
		return name + ":latest"
	}
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// refIndex maps every name of every image (ID, tags, digests, raw and
// normalised) to the image ID.
type refIndex map[string]string

func newRefIndex(images []*runtimeapi.Image) refIndex {
	idx := refIndex{}
	for _, img := range images {
		id := img.GetId()
		names := append([]string{id}, img.GetRepoTags()...)
		names = append(names, img.GetRepoDigests()...)
		for _, n := range names {
			if n == "" {
				continue
			}
			idx[n] = id
			idx[normalizeRef(n)] = id
		}
	}
	return idx
}

// lookup returns the ID of the image ref names, or "".
func (idx refIndex) lookup(ref string) string {
	if ref == "" {
		return ""
	}
	if id, ok := idx[ref]; ok {
		return id
	}
	return idx[normalizeRef(ref)]
}
