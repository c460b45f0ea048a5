//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/kube"
	"github.com/nodelet/nodelet/pkg/options"
)

// TestStopLeavesNoGoroutine runs nodelet in this process as a cluster
// member with every part busy (an API pod with a config map volume, env
// from it and probes; a static pod; the node API), stops it as SIGTERM
// does (its context ends) and checks that run returned only once every
// goroutine nodelet started had stopped.
func TestStopLeavesNoGoroutine(t *testing.T) {
	rt := framework.StartRuntime(t)
	cluster := framework.StartCluster(t, framework.NodeName)
	dir := t.TempDir()
	// Pods outlive nodelet, and so do the mounts it made for them.
	t.Cleanup(func() {
		if err := framework.UnmountAll(dir); err != nil {
			t.Errorf("unmount what nodelet left under %s: %v", dir, err)
		}
	})
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	static := `apiVersion: v1
kind: Pod
metadata: {name: static-web}
spec:
  containers:
  - {name: c, image: busybox:1.35, command: [sleep, "3600"]}
`
	if err := os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(static), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := framework.FreePort(t)
	fs := options.NewFlagSet("nodelet")
	if err := fs.Parse([]string{
		"--kubeconfig", cluster.NodeKubeconfig,
		"--container-runtime-endpoint", rt.Endpoint,
		"--root-dir", filepath.Join(dir, "root"),
		"--pod-manifest-path", manifests,
		"--hostname-override", framework.NodeName,
		"--read-only-port", strconv.Itoa(readOnly),
		"--healthz-port", strconv.Itoa(framework.FreePort(t)),
		"--port", strconv.Itoa(framework.FreePort(t)),
		"--address", "127.0.0.1",
		"--client-ca-file", cluster.CAFile,
	}); err != nil {
		t.Fatal(err)
	}
	opts, _, err := options.Load(fs)
	if err != nil {
		t.Fatal(err)
	}
	opts.PodLogsDir = filepath.Join(dir, "logs") // config file only: no flag
	// Pod cgroups under a root of this test's, never the host's /kubepods.
	opts.CgroupRoot = framework.NewCgroupRoot(t)

	admin := adminClient(t, cluster.AdminKubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"mode": "on"}}
	if _, err := admin.ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
	apiPod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                     framework.NodeName,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []v1.Container{{
				Name: "c", Image: "busybox:1.35", Command: []string{"sleep", "3600"},
				Env: []v1.EnvVar{{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "mode"}}}},
				VolumeMounts:   []v1.VolumeMount{{Name: "settings", MountPath: "/settings"}},
				ReadinessProbe: probe, LivenessProbe: probe,
			}},
			Volumes: []v1.Volume{{Name: "settings", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}}},
		},
	}
	if _, err := admin.Pods("default").Create(ctx, apiPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// What runs now belongs to the test, the framework and the libraries'
	// process-wide caches, not to nodelet.
	before := goleak.IgnoreCurrent()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, opts) }()
	waitReady(t, ctx, admin, readOnly, done)

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not return within a minute of its stop")
	}
	goleak.VerifyNone(t, before,
		// Process-wide, started once by the libraries and kept on purpose.
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntil"), // client-go's cert rotation cache
		// Idle keep-alive connections of the API client's shared transport
		// (client-go caches transports per config for the process).
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
	)
}

// waitReady waits until the API pod is ready and the static pod's mirror
// exists, so that every part of nodelet has work under way at the stop.
func waitReady(t *testing.T, ctx context.Context, admin kube.Interface, readOnly int, done <-chan error) {
	t.Helper()
	deadline, _ := ctx.Deadline()
	poll.Within(t, time.Until(deadline), "the API pod ready and the static pod's mirror", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("nodelet stopped early: %v", err)
		default:
		}
		p, err := admin.Pods("default").Get(ctx, "busy", metav1.GetOptions{})
		_, mirrorErr := admin.Pods("default").Get(ctx, "static-web-"+framework.NodeName, metav1.GetOptions{})
		return err == nil && mirrorErr == nil && podReady(p), fmt.Sprintf("%v %v; read-only port %d", err, mirrorErr, readOnly)
	})
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func adminClient(t *testing.T, kubeconfig string) kube.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewForConfig(cfg)
	if err != nil {
		t.Fatal(fmt.Errorf("admin client: %w", err))
	}
	return c
}
