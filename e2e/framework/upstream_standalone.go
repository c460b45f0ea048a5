//go:build e2e

package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nodelet/nodelet/internal/upstreamkubelet"
)

// The upstream kubelet as a reference on the same tests: run in a Nodelet's
// place (same dirs, ports and runtime), so that a test reads its /pods,
// healthz and runtime the same way for both.

// upstreamKubeletPath is the upstream kubelet hack/build-tools.sh builds
// into _output/tools/bin, or NODELET_UPSTREAM_KUBELET.
func upstreamKubeletPath() (string, error) {
	bin := os.Getenv("NODELET_UPSTREAM_KUBELET")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "_output", "tools", "bin", "kubelet")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("upstream kubelet %s (TOOLS=kubelet bash hack/build-tools.sh builds it): %w", bin, err)
	}
	return bin, nil
}

// NewStandaloneUpstreamKubelet is NewNodelet running the upstream kubelet standalone
// (static pods only, no API server), with the configuration that works on
// this cgroup v1 host (docs/BENCHMARKS.md, shared NOTES).
func NewStandaloneUpstreamKubelet(t testing.TB, rt *Runtime) *Nodelet {
	t.Helper()
	bin, err := upstreamKubeletPath()
	if err != nil {
		t.Fatal(err)
	}
	n := NewNodelet(t, rt)
	cfg, err := upstreamkubelet.Config{
		StaticPodPath: n.ManifestDir, PodLogsDir: n.LogDir, RuntimeEndpoint: rt.Endpoint,
		Port: n.APIPort, ReadOnlyPort: n.ReadOnlyPort, HealthzPort: n.HealthzPort,
	}.YAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(n.RootDir), "kubelet-config.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	n.Bin = bin
	// --cert-dir defaults to /var/lib/kubelet/pki whatever --root-dir says.
	n.Args = []string{"--config", path, "--root-dir", n.RootDir, "--cert-dir", filepath.Join(n.RootDir, "pki"),
		"--hostname-override", NodeName, "--v", strconv.Itoa(2)}
	return n
}
