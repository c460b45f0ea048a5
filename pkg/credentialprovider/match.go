package credentialprovider

import "strings"

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
