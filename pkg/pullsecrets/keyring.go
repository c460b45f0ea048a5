package pullsecrets

import (
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
)

// dockerHubKey is the key Docker Hub credentials are filed under once
// normalised ("https://index.docker.io/v1/" -> "index.docker.io").
const dockerHubKey = "index.docker.io"

// Keyring holds the entries of a pod's pull secrets by normalised key.
// The zero value is empty and ready to use.
type Keyring struct {
	keys  []string // distinct normalised keys
	creds map[string][]Credential
}

// Add files entries under their normalised keys, after those already
// added. An entry whose key is no URL is ignored, as upstream ignores it.
func (k *Keyring) Add(entries []Entry) {
	// Within one secret the order of keys is that of a JSON object, which
	// means none; sort so that equal input gives equal order.
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	for _, e := range entries {
		key, ok := normalizeKey(e.Key)
		if !ok {
			continue
		}
		if k.creds == nil {
			k.creds = map[string][]Credential{}
		}
		if _, seen := k.creds[key]; !seen {
			k.keys = append(k.keys, key)
		}
		k.creds[key] = append(k.creds[key], e.Credential)
	}
}

// Len is the number of credentials held.
func (k *Keyring) Len() int {
	n := 0
	for _, c := range k.creds {
		n += len(c)
	}
	return n
}

// Lookup returns the credentials to try for image, in order: those of
// every key matching its repository, the most specific key first (keys in
// reverse order), else, for a Docker Hub image, those of index.docker.io.
// None: pull without credentials.
func (k *Keyring) Lookup(image string) []Credential {
	repo := Repository(image)
	keys := slices.Clone(k.keys)
	slices.Sort(keys)
	slices.Reverse(keys)
	var out []Credential
	for _, key := range keys {
		if MatchesRepository(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		out = append(out, k.creds[dockerHubKey]...)
	}
	return out
}

// normalizeKey brings a registry key to host[:port][/path]: the scheme is
// dropped and so is a leading /v1 or /v2 of the path (docker configs write
// "https://index.docker.io/v1/").
func normalizeKey(key string) (string, bool) {
	if !strings.HasPrefix(key, "https://") && !strings.HasPrefix(key, "http://") {
		key = "https://" + key
	}
	u, err := url.Parse(key)
	if err != nil || u.Host == "" {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v2/") {
		p = p[3:]
	}
	if p == "" || p == "/" {
		return u.Host, true
	}
	return u.Host + p, true
}

// MatchesRepository reports whether a registry key or pattern (normalised:
// host[:port][/path], host labels may be globs) covers repository repo
// (host[:port]/path): equal ports (a pattern without a port matches only a
// repository without one), as many host labels, each label a glob match,
// and the pattern's path a prefix of the repository's. Docker config keys
// and credential provider plugins' matchImages follow the same rule.
func MatchesRepository(key, repo string) bool {
	k, err := url.Parse("https://" + key)
	if err != nil {
		return false
	}
	r, err := url.Parse("https://" + repo)
	if err != nil {
		return false
	}
	kLabels, kPort := SplitHost(k.Host)
	rLabels, rPort := SplitHost(r.Host)
	if kPort != rPort || len(kLabels) != len(rLabels) || !strings.HasPrefix(r.Path, k.Path) {
		return false
	}
	for i, glob := range kLabels {
		if ok, err := path.Match(glob, rLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// SplitHost splits host[:port] into the host's dot-separated labels and the
// port ("" without one).
func SplitHost(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub reports whether a normalised repository is on Docker Hub.
func isDockerHub(repo string) bool {
	host, _, _ := strings.Cut(repo, "/")
	return host == "docker.io" || host == "index.docker.io"
}

// Repository is the repository an image reference pulls from, with the
// registry host always present: busybox:1.35 -> docker.io/library/busybox,
// registry:5000/team/app@sha256:... -> registry:5000/team/app.
func Repository(image string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(image), "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	first, _, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	return name
}
