//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// What a client certificate rotation does to nodelet's watches and statuses. On a rotation
// nodelet closes every API connection (as upstream does), so each watch ends and is started
// again with the new certificate. The test measures, per rotation: how many watches ended and
// how many LISTs (relists) the API server served in the meantime, the watches open before and
// after it (apiserver metrics: nodelet is the only node agent of this API server, which runs no
// controller-manager or scheduler; the test's own CSR polling is left out), what nodelet's log
// says about its watches (client-go's reflector lines), and whether a pod's status updates keep
// reaching the API: the toggler pod's readiness flips every togglePeriod and its Ready condition
// is followed in the API through a watch with the admin credential, which no rotation touches.

// togglePeriod is how long the toggler's container stays ready, then unready.
const togglePeriod = 4 * time.Second

// togglerYAML is a pod whose readiness probe (every second, one result flips it) follows a file
// the container creates and removes every togglePeriod.
func togglerYAML(name string) string {
	secs := int(togglePeriod / time.Second)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
    command: ["sh", "-c", "while true; do touch /tmp/ready; sleep %d; rm -f /tmp/ready; sleep %d; done"]
    readinessProbe:
      exec: {command: ["test", "-f", "/tmp/ready"]}
      periodSeconds: 1
      failureThreshold: 1
      successThreshold: 1
`, name, framework.NodeName, secs, secs)
}

// readyFlips records when the API showed a pod's Ready condition change.
type readyFlips struct {
	mu    sync.Mutex
	times []time.Time
}

// follow watches pod name (from a fresh list, resuming from the last resource version on a
// closed watch) until ctx ends, and records every change of its Ready condition.
func (r *readyFlips) follow(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	pods := c.CoreV1().Pods("default")
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Errorf("toggler: list: %v", err)
		return
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return pods.Watch(ctx, o)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		t.Errorf("toggler: watch: %v", err)
		return
	}
	defer w.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			p, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				continue
			}
			ready := ""
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodReady {
					ready = string(c.Status)
				}
			}
			if ready != "" && ready != last {
				if last != "" {
					r.mu.Lock()
					r.times = append(r.times, time.Now())
					r.mu.Unlock()
				}
				last = ready
			}
		}
	}
}

// around counts the flips within span before and after at, and returns the gap between the last
// flip before at and the first after it (0 when there is none after).
func (r *readyFlips) around(at time.Time, span time.Duration) (before, after int, gap time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var prev, next time.Time
	for _, f := range r.times {
		switch {
		case f.Before(at):
			prev = f
			if at.Sub(f) <= span {
				before++
			}
		default:
			if next.IsZero() {
				next = f
			}
			if f.Sub(at) <= span {
				after++
			}
		}
	}
	if !prev.IsZero() && !next.IsZero() {
		gap = next.Sub(prev)
	}
	return before, after, gap
}

// offsets lists the flips within span of at, as seconds from at.
func (r *readyFlips) offsets(at time.Time, span time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.times {
		if d := f.Sub(at); d >= -span && d <= span {
			out = append(out, fmt.Sprintf("%+.1f", d.Seconds()))
		}
	}
	return strings.Join(out, " ")
}

// since counts the flips after at.
func (r *readyFlips) since(at time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.times {
		if f.After(at) {
			n++
		}
	}
	return n
}

// apiTraffic is what the API server's metrics say about watches and lists, by resource. The
// open watches include the API server's own (its informers over loopback).
type apiTraffic struct {
	openWatches  map[string]float64 // apiserver_longrunning_requests{verb="WATCH"}
	watchesEnded map[string]float64 // apiserver_request_total{verb="WATCH"}: counted when a watch ends
	lists        map[string]float64 // apiserver_request_total{verb="LIST"} but the test's CSR polling
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// delta is after-before per resource, the resources that changed only, sorted.
func delta(before, after map[string]float64) string {
	var out []string
	for r, v := range after {
		if d := v - before[r]; d != 0 {
			out = append(out, fmt.Sprintf("%s %+.0f", r, d))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

func readAPITraffic(ctx context.Context, c kubernetes.Interface) (apiTraffic, error) {
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiTraffic{}, fmt.Errorf("API server metrics: %w", err)
	}
	a := apiTraffic{openWatches: map[string]float64{}, watchesEnded: map[string]float64{}, lists: map[string]float64{}}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "apiserver_longrunning_requests" && name != "apiserver_request_total") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, m := range metricLabel.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		res := l["resource"]
		switch {
		case name == "apiserver_longrunning_requests" && l["verb"] == "WATCH":
			a.openWatches[res] += v
		case name == "apiserver_request_total" && l["verb"] == "WATCH":
			a.watchesEnded[res] += v
		case name == "apiserver_request_total" && l["verb"] == "LIST" && res != "certificatesigningrequests":
			a.lists[res] += v
		}
	}
	return a, nil
}

// rotationLog finds nodelet's "Client certificate changed" line for the certificate that ends
// at notAfter and returns when it was logged (klog's header: local time, no year; the zero time
// when there is no such line) and the log after it, up to the next such line.
func rotationLog(log string, notAfter time.Time) (at time.Time, rest string) {
	const marker = "Client certificate changed"
	lines := strings.Split(log, "\n")
	for i, line := range lines {
		if !strings.Contains(line, marker) || !strings.Contains(line, notAfter.UTC().String()) {
			continue
		}
		var b strings.Builder
		for _, l := range lines[i+1:] {
			if strings.Contains(l, marker) {
				break
			}
			b.WriteString(l + "\n")
		}
		if f := strings.Fields(line); len(f) >= 2 && len(f[0]) == 5 {
			if ts, err := time.ParseInLocation("0102 15:04:05.000000", f[0][1:]+" "+f[1], time.Local); err == nil {
				at = ts.AddDate(time.Now().Year(), 0, 0)
			}
		}
		return at, b.String()
	}
	return time.Time{}, ""
}

// reflectorLines counts what client-go's reflectors logged about nodelet's watches in log:
// relists ("Listing and watching", logged at -v 3 and up) and watches that ended with an error
// (logged at any level).
func reflectorLines(log string) (relists, watchErrors int) {
	relists = strings.Count(log, "Listing and watching")
	for _, s := range []string{"Unexpected EOF during watch", "Watch closed with unexpected EOF", "watch ended with error", "Failed to watch"} {
		watchErrors += strings.Count(log, s)
	}
	return relists, watchErrors
}

// rotationTraffic logs what rotation round did to nodelet's watches and the toggler's statuses,
// given the API traffic before it; it fails the test unless the toggler's readiness changes
// keep reaching the API after the rotation.
func rotationTraffic(ctx context.Context, t *testing.T, admin kubernetes.Interface, n *framework.Nodelet, flips *readyFlips, round int, next *x509.Certificate, before apiTraffic) {
	t.Helper()
	at, _ := rotationLog(n.Log(), next.NotAfter)
	if at.IsZero() {
		t.Errorf("rotation %d: nodelet logged no \"Client certificate changed\" line with notAfter %s", round, next.NotAfter.UTC())
		at = time.Now()
	}
	// Status updates keep flowing: the pod's readiness keeps changing in the API after it.
	poll.Until(t, 2*time.Minute, 500*time.Millisecond, fmt.Sprintf("the toggler's readiness changes in the API after rotation %d", round), func() (bool, string) {
		got := flips.since(at)
		return got >= 3, fmt.Sprintf("%d changes since %s", got, at.Format(time.TimeOnly))
	})
	after, err := readAPITraffic(ctx, admin)
	if err != nil {
		t.Errorf("rotation %d: %v", round, err)
		return
	}
	log := n.Log()
	_, rest := rotationLog(log, next.NotAfter)
	relists, watchErrors := reflectorLines(rest)
	allRelists, _ := reflectorLines(log)
	fb, fa, gap := flips.around(at, 30*time.Second)
	t.Logf("MEASURE client certificate rotation %d (%s): API server: watches ended: %s; LISTs: %s; open watches %.0f before -> %.0f after (%s); "+
		"nodelet's log since: %d relists (%d in its whole log), %d watch errors; toggler's Ready changes in the API: %d in the 30 s before, %d in the 30 s after, "+
		"largest gap across the rotation %.1f s (flips every %s; at %s s from the rotation)", round, at.Format(time.TimeOnly),
		delta(before.watchesEnded, after.watchesEnded), delta(before.lists, after.lists),
		sum(before.openWatches), sum(after.openWatches), delta(before.openWatches, after.openWatches),
		relists, allRelists, watchErrors, fb, fa, gap.Seconds(), togglePeriod, flips.offsets(at, 30*time.Second))
}

// startToggler creates the toggler pod and follows its readiness until ctx ends (wg counts the
// follower); it returns once the API has shown the readiness change twice.
func startToggler(ctx context.Context, t *testing.T, cluster *framework.Cluster, admin kubernetes.Interface, wg *sync.WaitGroup) *readyFlips {
	t.Helper()
	if out, err := cluster.KubectlInput(togglerYAML("toggler"), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	flips := &readyFlips{}
	wg.Add(1)
	go func() { defer wg.Done(); flips.follow(ctx, t, admin, "toggler") }()
	poll.Until(t, 90*time.Second, 500*time.Millisecond, "the toggler's readiness changing in the API", func() (bool, string) {
		got := flips.since(time.Time{})
		return got >= 2, fmt.Sprintf("%d changes", got)
	})
	return flips
}
