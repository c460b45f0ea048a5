// Package version says which nodelet this is and which Kubernetes release's
// kubelet it stands in for, in one place. Like k3s (v1.31.4+k3s1), nodelet
// reports the Kubernetes version whose kubelet behaviour it implements, with
// its own version as semver build metadata: v1.37.2+nodelet.0.1.0-dev. Tools
// that compare kubelet versions (kubeadm's preflight and upgrade checks, the
// version skew policy) read it as v1.37.2, since build metadata does not take
// part in a comparison, and a person reading it still sees it is nodelet.
package version

import (
	"regexp"
	"runtime"
	"strings"
)

// Set at build time with
//
//	-ldflags "-X github.com/nodelet/nodelet/pkg/version.nodelet=v0.2.0
//	          -X github.com/nodelet/nodelet/pkg/version.kubernetes=v1.37.2"
//
// kubernetes must follow the k8s.io/api module nodelet is built with
// (v0.37.2 -> v1.37.2): that is the API, and the kubelet behaviour, nodelet
// implements. A unit test checks the default against go.mod.
var (
	kubernetes = "v1.37.2"
	nodelet    = "v0.1.0-dev"
)

// Kubernetes is the Kubernetes release nodelet implements the kubelet of,
// e.g. "v1.37.2".
func Kubernetes() string { return kubernetes }

// MajorMinor is the Kubernetes release's "<major>.<minor>", e.g. "1.37": the
// version in the probes' User-Agent (kube-probe/1.37), as upstream.
func MajorMinor() string {
	parts := strings.SplitN(strings.TrimPrefix(kubernetes, "v"), ".", 3)
	if len(parts) < 2 {
		return strings.TrimPrefix(kubernetes, "v")
	}
	return parts[0] + "." + parts[1]
}

// Nodelet is nodelet's own version, e.g. "v0.1.0-dev".
func Nodelet() string { return nodelet }

// notBuildMetadata matches what semver does not allow in build metadata;
// emptyIdentifiers, the empty identifiers it does not allow either.
var (
	notBuildMetadata = regexp.MustCompile(`[^0-9A-Za-z.-]+`)
	emptyIdentifiers = regexp.MustCompile(`\.{2,}`)
)

// String is the version nodelet reports as the kubelet's: the Kubernetes
// version with nodelet's own as build metadata, "v1.37.2+nodelet.0.1.0-dev".
// A nodelet version with characters semver does not allow there (a
// "+dirty" from git describe) has them replaced by "-", so the result
// always parses.
func String() string {
	own := strings.TrimPrefix(nodelet, "v")
	own = notBuildMetadata.ReplaceAllString(own, "-")
	own = strings.Trim(emptyIdentifiers.ReplaceAllString(own, "."), ".")
	if own == "" {
		return kubernetes + "+nodelet"
	}
	return kubernetes + "+nodelet." + own
}

// VersionLine is what `nodelet --version` prints, in the form the upstream
// kubelet prints and kubeadm's preflight parses ("Kubernetes vX.Y.Z...").
func VersionLine() string { return "Kubernetes " + String() }

// UserAgent is nodelet's user agent towards the API server, in client-go's
// form: "nodelet/v1.37.2+nodelet.0.1.0-dev (linux/amd64)".
func UserAgent() string {
	return "nodelet/" + String() + " (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
