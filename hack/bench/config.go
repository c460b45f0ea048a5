package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Config mode (issue 11): each agent in its own fresh cluster, as in cluster mode, gets API pods
// that mount one ConfigMap and one Secret (the same two for every pod); measured are their start
// and how long an update of the ConfigMap takes to reach every pod's volume.

const (
	configBeginMarker = "<!-- BEGIN GENERATED: hack/bench.sh config volumes -->"
	configEndMarker   = "<!-- END GENERATED: hack/bench.sh config volumes -->"
	// updateCap bounds ConfigMap update -> new content in every pod. The upstream kubelet rewrites
	// a pod's volumes only when it syncs the pod, about once a minute for a pod that runs.
	updateCap = 180 * time.Second
	// contentPoll is how often the benchmark reads the pods' volume files while it waits.
	contentPoll = 10 * time.Millisecond
)

type configResult struct {
	outcome
	ready time.Duration
	// plain: pods without volumes; vols: pods with the ConfigMap and Secret volumes.
	plain, vols []time.Duration
	// seen: per pod, ConfigMap update -> the new content in its volume; capped when some pod
	// did not see it within updateCap.
	seen         []time.Duration
	updateCapped bool
	rssKiB       int64
}

func (r *configResult) outcomeOf() *outcome {
	if r == nil {
		return nil
	}
	return &r.outcome
}

// configPod is apiPod with the bench ConfigMap at /cfg and the bench Secret at /sec.
func configPod(name, node string) *v1.Pod {
	p := apiPod(name, node, []string{"sleep", "3600"})
	p.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "bench-cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "bench-sec"}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}}
	return p
}

// runConfigLeg: cfg.configPods pods with volumes one after the other, the first cfg.pods of them
// each after a pod without volumes, then the ConfigMap update.
func runConfigLeg(ctx context.Context, cfg config, subject string) *configResult {
	r := &configResult{outcome: outcome{subject: subject, load: loadavg()}}
	c := joinForLeg(ctx, cfg, subject, "config", nil, &r.outcome)
	defer c.close()
	if !r.ok() {
		return r
	}
	a, admin := c.agent, c.admin
	fail := failer(c, &r.outcome, r)
	r.ready = c.ready
	pods := admin.CoreV1().Pods("default")

	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench-cfg"},
		Data: map[string]string{"key": "value-1"}}, metav1.CreateOptions{}); err != nil {
		return fail("create ConfigMap: %v", err)
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bench-sec"},
		Data: map[string][]byte{"password": []byte("secret-1")}}, metav1.CreateOptions{}); err != nil {
		return fail("create Secret: %v", err)
	}
	// The first cfg.pods pods with volumes alternate with as many without: the two p50s compared
	// come from the same minutes and the same number of pods on the node. The pods without volumes
	// are then deleted, so that neither agent holds more than cfg.configPods pods (the upstream
	// kubelet's default maxPods is 110).
	one := int64(1)
	deletePlain := func() error {
		for i := range r.plain {
			if err := pods.Delete(ctx, plainName(i), metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete: %w", err)
			}
		}
		if err := waitNoPlainPods(ctx, pods, 120*time.Second); err != nil {
			return fmt.Errorf("pods without volumes deleted -> gone: %w", err)
		}
		return nil
	}
	var files []string
	for i := 0; i < cfg.configPods; i++ {
		if i < cfg.pods {
			p := apiPod(plainName(i), cfg.nodeName, []string{"sleep", "3600"})
			p.Spec.TerminationGracePeriodSeconds = &one
			d, _, err := createAndWaitRunning(ctx, pods, p, a.exited)
			if err != nil {
				return fail("pod %s: %v", p.Name, err)
			}
			r.plain = append(r.plain, d)
		}
		if i == cfg.pods {
			if err := deletePlain(); err != nil {
				return fail("%v", err)
			}
		}
		name := fmt.Sprintf("bench-cfg-%03d", i)
		d, p, err := createAndWaitRunning(ctx, pods, configPod(name, cfg.nodeName), a.exited)
		if err != nil {
			return fail("pod %s: %v", name, err)
		}
		r.vols = append(r.vols, d)
		files = append(files, configFile(a.rootDir, p.UID))
	}
	if cfg.pods >= cfg.configPods {
		if err := deletePlain(); err != nil {
			return fail("%v", err)
		}
	}
	logf("config %s: %d pods without volumes, p50 %s", subject, len(r.plain), percentile(r.plain, 50).Round(time.Millisecond))
	logf("config %s: %d pods with a ConfigMap and a Secret volume, p50 %s", subject, cfg.configPods, percentile(r.vols, 50).Round(time.Millisecond))
	if m, err := readProcMem(a.pid()); err == nil {
		r.rssKiB = m.rss
	}
	// Every pod has the first content: the files read are the ones its container sees.
	for _, f := range files {
		if b, err := os.ReadFile(f); err != nil || string(b) != "value-1" {
			return fail("%s before the update: %q, %v", f, b, err)
		}
	}

	cm, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "bench-cfg", metav1.GetOptions{})
	if err != nil {
		return fail("get ConfigMap: %v", err)
	}
	cm.Data["key"] = "value-2"
	t0 := time.Now()
	if _, err := admin.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fail("update ConfigMap: %v", err)
	}
	r.seen, err = waitContent(ctx, files, []byte("value-2"), t0, a.exited)
	switch {
	case errors.Is(err, errWatchTimeout):
		r.updateCapped = true
		logf("config %s: %d of %d pods saw the update within %s", subject, len(r.seen), len(files), updateCap)
	case err != nil:
		return fail("ConfigMap update -> new content: %v", err)
	default:
		logf("config %s: ConfigMap update in all %d pods after %s", subject, len(files), percentile(r.seen, 100).Round(time.Millisecond))
	}
	if !a.alive() {
		return fail("%s exited", subject)
	}
	logf("config %s: done", subject)
	return r
}

// configFile is the ConfigMap key's file on the node, in the volume directory both agents bind
// into the container (upstream's layout, which nodelet keeps).
func configFile(rootDir string, uid types.UID) string {
	return filepath.Join(rootDir, "pods", string(uid), "volumes", "kubernetes.io~configmap", "cfg", "key")
}

// waitContent polls files until each holds want and returns, per file, the time from t0 to the
// first read that saw it, in the order seen. It gives up after updateCap with errWatchTimeout
// and what it saw so far.
func waitContent(ctx context.Context, files []string, want []byte, t0 time.Time, dead <-chan struct{}) ([]time.Duration, error) {
	pending := map[string]bool{}
	for _, f := range files {
		pending[f] = true
	}
	var seen []time.Duration
	tick := time.NewTicker(contentPoll)
	defer tick.Stop()
	for len(pending) > 0 {
		for f := range pending {
			if b, err := os.ReadFile(f); err == nil && bytes.Equal(b, want) {
				seen = append(seen, time.Since(t0))
				delete(pending, f)
			}
		}
		if len(pending) == 0 {
			break
		}
		if time.Since(t0) > updateCap {
			return seen, errWatchTimeout
		}
		select {
		case <-tick.C:
		case <-dead:
			return seen, errors.New("the agent exited")
		case <-ctx.Done():
			return seen, ctx.Err()
		}
	}
	return seen, nil
}

func plainName(i int) string { return fmt.Sprintf("bench-plain-%02d", i) }

type podLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1.PodList, error)
}

// waitNoPlainPods waits until the namespace has no pod without volumes left.
func waitNoPlainPods(ctx context.Context, pods podLister, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, err := pods.List(ctx, metav1.ListOptions{})
		left := 0
		if err == nil {
			for _, p := range l.Items {
				if strings.HasPrefix(p.Name, "bench-plain-") {
					left++
				}
			}
			if left == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pods left after %s (%v)", left, timeout, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
