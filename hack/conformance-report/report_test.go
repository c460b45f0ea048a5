package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIssueFor(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"[sig-node] Probing container should be restarted with a exec \"cat /tmp/health\" liveness probe [NodeConformance]", "#10 lifecycle"},
		{"[sig-node] Container Lifecycle Hook when create a pod with lifecycle hook should execute poststart exec hook properly [NodeConformance]", "#10 lifecycle"},
		{"[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance]", "#11 config"},
		{"[sig-node] Variable Expansion should allow composing env vars into new env vars [NodeConformance]", "#11 config"},
		{"[sig-node] KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [NodeConformance]", "#11 config"},
		{"[sig-node] Security Context When creating a container with runAsNonRoot should not run without a specified user ID", "#12 security"},
		{"[sig-node] Sysctls [LinuxOnly] should support sysctls [MinimumKubeletVersion:1.21] [Environment:NotInUserNS]", "#12 security"},
		{"[sig-node] Pods should get a host IP [NodeConformance]", ""},
	} {
		if got := issueFor(tc.name); got != tc.want {
			t.Errorf("issueFor(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSpecName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance] [sig-node, NodeConformance, Conformance]",
			"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]", true},
		{"[It] [sig-node] Pods x [NodeConformance] [sig-node]", "[sig-node] Pods x [NodeConformance]", true},
		{"[It] [sig-node] Pods x [other]", "[sig-node] Pods x [other]", true},
		{"[SynchronizedBeforeSuite]", "", false},
	} {
		got, ok := specName(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("specName(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

const sampleJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4">
  <testsuite name="Kubernetes e2e suite" tests="4">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed"></testcase>
    <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance]" status="passed"></testcase>
    <testcase name="[It] [sig-storage] ConfigMap should be consumable [NodeConformance]" status="failed">
      <failure message="&#xA;expected pod to succeed&#xA;more" type="failed">detail</failure>
    </testcase>
    <testcase name="[It] [sig-node] Something [Serial] [NodeConformance]" status="skipped"><skipped message="skipped"></skipped></testcase>
  </testsuite>
</testsuites>`

func TestLoadCompareRender(t *testing.T) {
	dir := t.TempDir()
	nd := filepath.Join(dir, "nodelet")
	if err := os.MkdirAll(nd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nd, "junit.xml"), []byte(sampleJUnit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nd, "run.env"), []byte("WALL_SECONDS=125\nCOMMIT=abc123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := loadRun(nd)
	if err != nil {
		t.Fatal(err)
	}
	u, err := loadRun(filepath.Join(dir, "absent"))
	if err != nil || u.Present {
		t.Fatalf("absent run: %+v, %v", u, err)
	}
	if len(n.Specs) != 3 {
		t.Fatalf("specs = %v, want the 3 [It] entries", n.Specs)
	}
	c := compare(n, u, func(s string) bool { return !strings.Contains(s, "[Serial]") })
	if len(c.Rows) != 2 {
		t.Fatalf("rows = %+v, want 2 selected", c.Rows)
	}
	doc := render(c, nil, "a note", time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	for _, want := range []string{
		"| nodelet | 1 | 1 | 0 | 0 | 2m05s |",
		"| upstream kubelet v1.37.2 | - |",
		"| [sig-storage] ConfigMap should be consumable [NodeConformance] | #11 config | expected pod to succeed |",
		"## Notes on these runs\n\na note\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
}
