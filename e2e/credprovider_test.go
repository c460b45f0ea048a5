//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestImageCredentialProviderPlugin: a registry that wants a login, and a
// static pod (which can have no pull secret) pulling from it. Without
// --image-credential-provider-config the pull fails with the registry's
// 401; with it, an exec plugin (a shell script in the bin dir) answers a
// CredentialProviderResponse with the registry's login and the pod runs. The
// plugin's Registry cache key covers a second image of the same registry:
// it runs once for two pulls. An image outside its matchImages is not
// asked about and still fails. A config naming a plugin missing from the
// bin dir stops nodelet at start with a message naming it. The password is
// in no log line.
func TestImageCredentialProviderPlugin(t *testing.T) {
	const user, password = "e2e-plugin", "Plugin-Pa55-71c4"
	rt := framework.StartRuntime(t)
	reg := framework.StartRegistry(t, rt, user, password)
	first, second, unmatched := reg.Host+"/e2e/first:1", reg.Host+"/e2e/second:1", reg.Host+"/other/app:1"
	for _, ref := range []string{first, second, unmatched} {
		if err := pushBusybox(t, rt, reg, ref); err != nil {
			t.Fatal(err)
		}
	}

	// The plugin: records each request, answers the login for the
	// registry, cached per registry for an hour.
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	requests := filepath.Join(dir, "requests")
	plugin := fmt.Sprintf(`#!/bin/sh
cat >> "$REQUESTS"
echo " $1" >> "$REQUESTS"
cat <<'END'
{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"1h","auth":{%q:{"username":%q,"password":%q}}}
END
`, reg.Host, user, password)
	if err := os.WriteFile(filepath.Join(binDir, "e2e-creds"), []byte(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "credential-providers.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: e2e-creds
  matchImages: [%q]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [--from-config]
  env:
  - name: REQUESTS
    value: %q
`, reg.Host+"/e2e", requests), 0o644); err != nil {
		t.Fatal(err)
	}

	// Without the plugin: refused by the registry.
	n := framework.StartNodelet(t, rt)
	n.WriteManifest("first.yaml", pullManifest("first", first))
	p := n.WaitPod("first"+staticSuffix, 60*time.Second, "ErrImagePull", waitingReason("ErrImagePull"))
	if msg := framework.ContainerStatus(p, "app").State.Waiting.Message; !strings.Contains(msg, "401 Unauthorized") {
		t.Errorf("without the plugin: ErrImagePull message lacks the registry's 401: %q", msg)
	}
	n.RemoveManifest("first.yaml")
	n.WaitPod("first"+staticSuffix, 60*time.Second, "pod gone", func(p *v1.Pod) bool { return p == nil })
	n.Stop()

	// A plugin missing from the bin dir: nodelet refuses to start.
	empty := filepath.Join(dir, "empty-bin")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := framework.NewNodelet(t, rt, "--image-credential-provider-config", config, "--image-credential-provider-bin-dir", empty)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bad.Bin, bad.Args...).CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), filepath.Join(empty, "e2e-creds")) {
		t.Errorf("nodelet with a missing plugin: err %v, want an exit naming the plugin; output:\n%s", err, lastLines(string(out), 20))
	}

	// With the plugin.
	n = framework.StartNodelet(t, rt, "--image-credential-provider-config", config, "--image-credential-provider-bin-dir", binDir)
	n.WriteManifest("first.yaml", pullManifest("first", first))
	n.WaitPod("first"+staticSuffix, 60*time.Second, "running with the image pulled with the plugin's login", framework.Running)
	n.WriteManifest("second.yaml", pullManifest("second", second))
	n.WaitPod("second"+staticSuffix, 60*time.Second, "running with the cached login", framework.Running)
	n.WriteManifest("unmatched.yaml", pullManifest("unmatched", unmatched))
	p = n.WaitPod("unmatched"+staticSuffix, 60*time.Second, "ErrImagePull", waitingReason("ErrImagePull"))
	if msg := framework.ContainerStatus(p, "app").State.Waiting.Message; !strings.Contains(msg, "401 Unauthorized") {
		t.Errorf("unmatched image: ErrImagePull message lacks the registry's 401: %q", msg)
	}

	got, err := os.ReadFile(requests)
	if err != nil {
		t.Fatalf("the plugin never ran: %v", err)
	}
	want := fmt.Sprintf(`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":%q,"kind":"CredentialProviderRequest"} --from-config`+"\n", reg.Host+"/e2e/first")
	if string(got) != want {
		t.Errorf("plugin requests:\n%s\nwant exactly one (the second image is covered by the Registry cache key, the third by no matchImages):\n%s", got, want)
	}
	for _, logs := range []string{n.Log(), bad.Log()} {
		if strings.Contains(logs, password) {
			t.Errorf("nodelet's log carries the registry password")
		}
	}
}

// pullManifest is a static pod (host network) running image, pulled on
// every start.
func pullManifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: Always
    command: ["/bin/sleep", "3600"]
`, name, image)
}
