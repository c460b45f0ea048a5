//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/tracing/tracingtest"
)

// TestTracingExportsPodSyncAndCRISpans: with `tracing` in the
// KubeletConfiguration, nodelet exports, to the OTLP endpoint it names, the
// span of a static pod's first sync (upstream's "syncPod" with the pod's
// attributes) and, in the same trace under it, the CRI calls that started
// the pod; its resource is the kubelet's service on this node.
func TestTracingExportsPodSyncAndCRISpans(t *testing.T) {
	recv := tracingtest.Start(t)
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)
	appendConfig(t, n, fmt.Sprintf("tracing:\n  endpoint: %q\n  samplingRatePerMillion: 1000000\n", recv.Endpoint))
	n.Start()
	n.WriteManifest("traced.yaml", podManifest("traced", container("c", "sleep 3600")))
	n.WaitPod("traced"+staticSuffix, 90*time.Second, "running", framework.Running)

	var sync, sandbox tracingtest.Span
	poll.Until(t, 60*time.Second, 200*time.Millisecond, "a syncPod span with a RunPodSandbox call in its trace", func() (bool, string) {
		spans := recv.Spans()
		for _, s := range spans {
			if s.Name == "syncPod" && s.Attributes["k8s.pod.name"] == "traced"+staticSuffix && s.Attributes["k8s.pod.update_type"] == "create" {
				sync = s
			}
		}
		for _, s := range spans {
			if s.Name == "runtime.v1.RuntimeService/RunPodSandbox" && sync.TraceID != "" && s.TraceID == sync.TraceID {
				sandbox = s
			}
		}
		return sandbox.Name != "", fmt.Sprintf("%d spans received", len(spans))
	})
	if sync.Resource["service.name"] != "kubelet" || sync.Resource["host.name"] != framework.NodeName {
		t.Errorf("resource of the spans = %v, want service.name kubelet, host.name %s", sync.Resource, framework.NodeName)
	}
	if sync.Attributes["k8s.namespace.name"] != "default" || sync.Attributes["k8s.pod.uid"] == "" {
		t.Errorf("syncPod attributes = %v", sync.Attributes)
	}
	if sandbox.ParentSpanID != sync.SpanID {
		t.Errorf("RunPodSandbox span's parent = %s, want the syncPod span %s", sandbox.ParentSpanID, sync.SpanID)
	}
}

// appendConfig adds KubeletConfiguration fields to the --config file the
// framework gave n (before n starts).
func appendConfig(t *testing.T, n *framework.Nodelet, fields string) {
	t.Helper()
	cfg := ""
	for i, a := range n.Args {
		if a == "--config" && i+1 < len(n.Args) {
			cfg = n.Args[i+1]
		}
	}
	if cfg == "" {
		t.Fatalf("no --config among the framework's arguments %q", n.Args)
	}
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(fields)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
