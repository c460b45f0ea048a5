package credentialprovider

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// matchImage reports whether a matchImages pattern covers repo, an image's
// repository with its registry host (docker.io/library/busybox,
// reg:5000/team/app): as many host labels, each a glob match, equal ports
// (a pattern without a port matches only an image without one) and the
// pattern's path a prefix of the image's.
func matchImage(pattern, repo string) bool {
	p, err := url.Parse("https://" + pattern)
	if err != nil {
		return false
	}
	r, err := url.Parse("https://" + repo)
	if err != nil {
		return false
	}
	pLabels, pPort := splitHost(p.Host)
	rLabels, rPort := splitHost(r.Host)
	if pPort != rPort || len(pLabels) != len(rLabels) || !strings.HasPrefix(r.Path, p.Path) {
		return false
	}
	for i, glob := range pLabels {
		if ok, err := filepath.Match(glob, rLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// Cache key kinds a plugin's response names (cacheKeyType).
const (
	cacheKeyImage    = "Image"
	cacheKeyRegistry = "Registry"
	cacheKeyGlobal   = "Global"
)

// globalKey cannot be a repository or registry, which never contain '<'.
const globalKey = "<global>"

// cacheKey is what a response of kind keyType is filed under for repo;
// ok is false for an unknown kind, whose response is not used.
func cacheKey(keyType, repo string) (key string, ok bool) {
	switch keyType {
	case cacheKeyImage:
		return repo, true
	case cacheKeyRegistry:
		return registryOf(repo), true
	case cacheKeyGlobal:
		return globalKey, true
	}
	return "", false
}

// cacheCandidates are the keys a cached answer for repo may be under, most
// specific first.
func cacheCandidates(repo string) []string {
	return []string{repo, registryOf(repo), globalKey}
}

// registryOf is the host[:port] of a repository.
func registryOf(repo string) string {
	host, _, _ := strings.Cut(repo, "/")
	return host
}
