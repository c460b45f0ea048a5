package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster mode: each agent joins its own fresh test cluster (hack/cluster-up.sh) and is observed
// only through the API server, with client-go and the admin kubeconfig.

const (
	// mirrorCap is how long the benchmark waits for a deleted mirror pod to come back. The upstream
	// kubelet only re-creates it on its next pod resync (~66 s measured), so it may not.
	mirrorCap = 90 * time.Second
	// readyCap bounds process start -> Node Ready.
	readyCap = 90 * time.Second
)

type clusterResult struct {
	outcome
	ready        time.Duration
	api          []time.Duration
	mirror       time.Duration
	mirrorCapped bool // the mirror did not come back within mirrorCap
	del          []time.Duration
}

func runClusterLeg(ctx context.Context, cfg config, subject string) (r *clusterResult) {
	r = &clusterResult{outcome: outcome{subject: subject, load: loadavg()}}
	// The static pod is there from the start; its mirror is measured after the API pods.
	c := joinForLeg(ctx, cfg, subject, "cluster", func(a *agent) error { return a.writeManifest("static") }, &r.outcome)
	defer c.close()
	if !r.ok() {
		return r
	}
	a, admin := c.agent, c.admin
	fail := failer(c, &r.outcome, r)
	r.ready = c.ready

	// API pods: create -> status.phase Running, sequentially.
	pods := admin.CoreV1().Pods("default")
	for i := 0; i < cfg.pods; i++ {
		name := fmt.Sprintf("bench-api-%02d", i)
		d, _, err := createAndWaitRunning(ctx, pods, apiPod(name, cfg.nodeName, []string{"sleep", "3600"}), a.exited)
		if err != nil {
			return fail("API pod %s: %v", name, err)
		}
		r.api = append(r.api, d)
	}
	logf("cluster %s: %d API pods, p50 %s", subject, cfg.pods, percentile(r.api, 50).Round(time.Millisecond))

	// Static pod: its mirror deleted -> a mirror of the same name exists again.
	mirrorName := "bench-static-" + cfg.nodeName
	mw, err := pods.Watch(ctx, byName(mirrorName))
	if err != nil {
		return fail("watch mirror: %v", err)
	}
	var mirror *v1.Pod
	_, err = waitWatch(ctx, mw, 60*time.Second, a.exited, func(ev watch.Event) bool {
		p, ok := ev.Object.(*v1.Pod)
		if ok && ev.Type != watch.Deleted && p.DeletionTimestamp == nil {
			mirror = p
			return true
		}
		return false
	})
	if err != nil {
		return fail("mirror pod %s never appeared: %v", mirrorName, err)
	}
	mw, err = pods.Watch(ctx, metav1.ListOptions{FieldSelector: byName(mirrorName).FieldSelector, ResourceVersion: mirror.ResourceVersion})
	if err != nil {
		return fail("watch mirror: %v", err)
	}
	t0 := time.Now()
	if err := pods.Delete(ctx, mirrorName, metav1.DeleteOptions{}); err != nil {
		mw.Stop()
		return fail("delete mirror: %v", err)
	}
	at, err := waitWatch(ctx, mw, mirrorCap, a.exited, func(ev watch.Event) bool {
		p, ok := ev.Object.(*v1.Pod)
		return ok && ev.Type != watch.Deleted && p.UID != mirror.UID && p.DeletionTimestamp == nil
	})
	switch {
	case errors.Is(err, errWatchTimeout):
		r.mirrorCapped = true
		logf("cluster %s: mirror not back after %s", subject, mirrorCap)
	case err != nil:
		return fail("mirror back: %v", err)
	default:
		r.mirror = at.Sub(t0)
		logf("cluster %s: mirror back after %s", subject, r.mirror.Round(time.Millisecond))
	}

	// API delete of a pod that takes 3 s to stop -> the object is gone from the API.
	for i := 0; i < cfg.deletes; i++ {
		name := fmt.Sprintf("bench-del-%d", i)
		_, running, err := createAndWaitRunning(ctx, pods, apiPod(name, cfg.nodeName,
			[]string{"sh", "-c", "trap 'sleep 3; exit 0' TERM; while true; do sleep 0.1; done"}), a.exited)
		if err != nil {
			return fail("delete pod %s: %v", name, err)
		}
		// Give the shell time to install its trap before it is signalled.
		if err := sleep(ctx, time.Second); err != nil {
			return fail("%v", err)
		}
		dw, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: byName(name).FieldSelector, ResourceVersion: running.ResourceVersion})
		if err != nil {
			return fail("watch %s: %v", name, err)
		}
		t0 := time.Now()
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			dw.Stop()
			return fail("delete %s: %v", name, err)
		}
		at, err := waitWatch(ctx, dw, 90*time.Second, a.exited, func(ev watch.Event) bool { return ev.Type == watch.Deleted })
		if err != nil {
			return fail("delete %s -> gone: %v", name, err)
		}
		r.del = append(r.del, at.Sub(t0))
	}
	logf("cluster %s: delete -> gone p50 %s", subject, percentile(r.del, 50).Round(time.Millisecond))
	if !a.alive() {
		return fail("%s exited", subject)
	}
	logf("cluster %s: done", subject)
	return r
}

// clusterAgent is an agent that joined its own fresh test cluster.
type clusterAgent struct {
	*agent
	admin        kubernetes.Interface
	ready        time.Duration // process start -> Node Ready
	notAvailable string        // the agent's binary is missing
	cleanups     []func()      // run by close, last first
}

// close stops the agent and tears its cluster down. It may be called on a
// nil or half-started clusterAgent.
func (c *clusterAgent) close() {
	if c == nil {
		return
	}
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
}

// joinForLeg joins the cluster of a leg of mode label whose outcome is o (joinCluster in
// STATE_DIR/label-subject); o says why when the leg cannot go on. Close the result.
func joinForLeg(ctx context.Context, cfg config, subject, label string, setup func(a *agent) error, o *outcome) *clusterAgent {
	c, err := joinCluster(ctx, cfg, subject, filepath.Join(cfg.stateDir, label+"-"+subject), label, setup)
	switch {
	case c.notAvailable != "":
		o.notAvailable = c.notAvailable
	case err != nil:
		o.err = err
	}
	return c
}

// failer returns a function that sets o.err, with the tail of the agent's
// log, and returns r.
func failer[R any](c *clusterAgent, o *outcome, r R) func(format string, args ...any) R {
	return func(format string, args ...any) R {
		o.err = fmt.Errorf(format, args...)
		if c.agent != nil && c.logFile != "" {
			o.err = fmt.Errorf("%w; %s:\n%s", o.err, c.logFile, tail(c.logFile, 10))
		}
		return r
	}
}

// joinCluster brings up a fresh cluster (hack/cluster-up.sh) in dir, runs
// setup (static manifests, say) and starts subject as its node, and waits
// for the Node to be Ready, watched from before the process starts. label
// prefixes its log lines. The result is never nil: close it.
func joinCluster(ctx context.Context, cfg config, subject, dir, label string, setup func(a *agent) error) (*clusterAgent, error) {
	c := &clusterAgent{}
	bin := cfg.kubelet
	if subject == "nodelet" {
		bin = cfg.nodelet
	} else if subject != "upstream" {
		return c, fmt.Errorf("unknown cluster subject %q (upstream, nodelet)", subject)
	}
	if _, err := os.Stat(bin); err != nil {
		c.notAvailable = fmt.Sprintf("not available: %s missing", bin)
		logf("%s %s: %s", label, subject, c.notAvailable)
		return c, nil
	}
	a, err := newAgent(subject, dir, 0)
	if err != nil {
		return c, err
	}

	// A fresh cluster for this leg, purged afterwards.
	clusterDir := filepath.Join(dir, "cluster")
	logf("%s %s: cluster-up", label, subject)
	if err := clusterUp(ctx, cfg, clusterDir, filepath.Join(dir, "cluster-up.log")); err != nil {
		return c, err
	}
	c.cleanups = append(c.cleanups, func() { clusterDown(cfg, clusterDir) })

	restCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(clusterDir, "admin.kubeconfig"))
	if err != nil {
		return c, err
	}
	restCfg.QPS, restCfg.Burst = 100, 200
	if c.admin, err = kubernetes.NewForConfig(restCfg); err != nil {
		return c, err
	}
	nodeKubeconfig := filepath.Join(clusterDir, "node.kubeconfig")
	if setup != nil {
		if err := setup(a); err != nil {
			return c, err
		}
	}
	var argv []string
	if subject == "upstream" {
		if _, err := os.Stat(upstreamHostDir); os.IsNotExist(err) {
			c.cleanups = append(c.cleanups, func() { os.RemoveAll(upstreamHostDir) })
		}
		argv, err = upstreamClusterArgv(a, bin, cfg.endpoint, cfg.nodeName, nodeKubeconfig)
	} else {
		argv, err = nodeletClusterArgv(a, bin, cfg.endpoint, cfg.nodeName, nodeKubeconfig)
	}
	if err != nil {
		return c, err
	}
	c.agent = a
	c.cleanups = append(c.cleanups, func() {
		a.stop(15 * time.Second)
		if err := unmountUnder(dir); err != nil {
			logf("%s %s: %v", label, subject, err)
		}
	})
	var o outcome
	fail := failer(c, &o, c)
	nw, err := c.admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", cfg.nodeName).String()})
	if err != nil {
		return fail("watch node: %v", err), o.err
	}
	logf("%s %s: starting the agent", label, subject)
	begin, err := a.launch(argv)
	if err != nil {
		nw.Stop()
		return fail("%v", err), o.err
	}
	at, err := waitWatch(ctx, nw, readyCap, a.exited, func(ev watch.Event) bool {
		n, ok := ev.Object.(*v1.Node)
		return ok && ev.Type != watch.Deleted && nodeReady(n)
	})
	if err != nil {
		return fail("node start -> Ready: %v", err), o.err
	}
	c.ready = at.Sub(begin)
	logf("%s %s: Node Ready after %s", label, subject, c.ready.Round(time.Millisecond))
	return c, nil
}

func byName(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

type podClient interface {
	Create(ctx context.Context, pod *v1.Pod, opts metav1.CreateOptions) (*v1.Pod, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// createAndWaitRunning creates pod and returns "Create call -> phase Running seen in a watch"
// and the pod as it was then. The watch is opened before the Create.
func createAndWaitRunning(ctx context.Context, pods podClient, pod *v1.Pod, dead <-chan struct{}) (time.Duration, *v1.Pod, error) {
	w, err := pods.Watch(ctx, byName(pod.Name))
	if err != nil {
		return 0, nil, err
	}
	t0 := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		w.Stop()
		return 0, nil, err
	}
	var running *v1.Pod
	at, err := waitWatch(ctx, w, 60*time.Second, dead, func(ev watch.Event) bool {
		p, ok := ev.Object.(*v1.Pod)
		if ok && ev.Type != watch.Deleted && p.Status.Phase == v1.PodRunning {
			running = p
			return true
		}
		return false
	})
	if err != nil {
		return 0, nil, err
	}
	return at.Sub(t0), running, nil
}

// apiPod is a hostNetwork busybox pod bound to node, with no service account token.
func apiPod(name, node string, command []string) *v1.Pod {
	grace := int64(30)
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{idLabel: name}},
		Spec: v1.PodSpec{
			NodeName:                      node,
			HostNetwork:                   true,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name:            "c",
				Image:           busyboxImage,
				ImagePullPolicy: v1.PullIfNotPresent,
				Command:         command,
			}},
		},
	}
}

var errWatchTimeout = errors.New("timed out")

// waitWatch reads w until cond holds for an event and returns when that event arrived. It stops
// w. dead closing (the agent exited) ends the wait with an error.
func waitWatch(ctx context.Context, w watch.Interface, timeout time.Duration, dead <-chan struct{}, cond func(watch.Event) bool) (time.Time, error) {
	defer w.Stop()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			now := time.Now()
			if !ok {
				return time.Time{}, errors.New("watch closed")
			}
			if ev.Type == watch.Error {
				return time.Time{}, fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			if cond(ev) {
				return now, nil
			}
		case <-timer.C:
			return time.Time{}, fmt.Errorf("%w after %s", errWatchTimeout, timeout)
		case <-dead:
			return time.Time{}, errors.New("the agent exited")
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func clusterUp(ctx context.Context, cfg config, stateDir, logFile string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "bash", cfg.clusterUp, stateDir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("APISERVER_PORT=%d", port), "NODE_NAME="+cfg.nodeName)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v:\n%s", cfg.clusterUp, stateDir, err, tail(logFile, 15))
	}
	return nil
}

func clusterDown(cfg config, stateDir string) {
	down := filepath.Join(filepath.Dir(cfg.clusterUp), "cluster-down.sh")
	if out, err := exec.Command("bash", down, stateDir, "--purge").CombinedOutput(); err != nil {
		logf("cluster-down %s: %v: %s", stateDir, err, strings.TrimSpace(string(out)))
	}
}

// upstreamClusterArgv: the standalone configuration plus --kubeconfig. No --node-ip: the upstream
// kubelet refuses a loopback one (docs/CLUSTER.md) and these legs need no logs/exec, so it picks
// its own address.
func upstreamClusterArgv(a *agent, bin, endpoint, nodeName, kubeconfig string) ([]string, error) {
	argv, err := upstreamArgv(bin, endpoint, nodeName, 0)(a)
	if err != nil {
		return nil, err
	}
	return append(argv, "--kubeconfig", kubeconfig), nil
}

func nodeletClusterArgv(a *agent, bin, endpoint, nodeName, kubeconfig string) ([]string, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	healthz, err := freePort()
	if err != nil {
		return nil, err
	}
	return []string{bin,
		"--kubeconfig", kubeconfig,
		"--pod-manifest-path", a.manifestDir,
		"--container-runtime-endpoint", endpointURL(endpoint),
		"--root-dir", a.rootDir,
		"--read-only-port", "0",
		"--healthz-port", fmt.Sprint(healthz),
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1", "--port", fmt.Sprint(port),
		"--hostname-override", nodeName,
	}, nil
}
