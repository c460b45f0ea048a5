//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/e2e/framework"
)

// teardowns follows the soak's API pods from their deletion until they are
// gone from the API: how long a teardown takes, and how many are still under
// way. The soak's window ("at most N pods at once") counts the pods still
// tearing down, so a node whose teardowns fall behind is not handed ever
// more pods: that would measure a pile-up, not a leak, and hide the cause.
type teardowns struct {
	deleted map[string]time.Time
	took    []time.Duration
	// heldBack is how long creation waited for teardowns to catch up.
	heldBack time.Duration
}

func newTeardowns() *teardowns { return &teardowns{deleted: map[string]time.Time{}} }

func (td *teardowns) deleting(name string) { td.deleted[name] = time.Now() }

// observe takes the soak pods the API holds now and returns how many
// deleted ones are still there.
func (td *teardowns) observe(pods []v1.Pod) int {
	present := map[string]bool{}
	for _, p := range pods {
		present[p.Name] = true
	}
	for name, at := range td.deleted {
		if !present[name] {
			td.took = append(td.took, time.Since(at))
			delete(td.deleted, name)
		}
	}
	return len(td.deleted)
}

// pending lists the soak pods in the API and returns how many deleted ones
// are still tearing down.
func (td *teardowns) pending(ctx context.Context, c kubernetes.Interface) (int, error) {
	list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "soak=1"})
	if err != nil {
		return 0, err
	}
	return td.observe(list.Items), nil
}

// summary: the teardown times seen (upper bounds: a pod is seen gone at the
// next listing, about one pace later).
func (td *teardowns) summary() string {
	if len(td.took) == 0 {
		return "no teardown observed"
	}
	s := slices.Clone(td.took)
	slices.Sort(s)
	q := func(f float64) time.Duration {
		return s[min(len(s)-1, int(f*float64(len(s))))].Round(100 * time.Millisecond)
	}
	return fmt.Sprintf("%d API pod teardowns (delete -> gone from the API): p50 %s, p90 %s, p99 %s, max %s; creation held back %s waiting for them",
		len(s), q(0.5), q(0.9), q(0.99), s[len(s)-1].Round(100*time.Millisecond), td.heldBack.Round(time.Second))
}

// leftPods describes the soak pods still in the API: by phase, whether
// deletion was asked and how long ago, and their containers' states, so a
// failed soak says whether teardowns were slow or stuck.
func leftPods(pods []v1.Pod) string {
	if len(pods) == 0 {
		return ""
	}
	byKind := map[string]int{}
	var oldest time.Duration
	for _, p := range pods {
		kind := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			kind += ", deleting"
			oldest = max(oldest, time.Since(p.DeletionTimestamp.Time))
		}
		var running int
		for _, c := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if c.State.Running != nil {
				running++
			}
		}
		kind += fmt.Sprintf(", %d containers running", running)
		byKind[kind]++
	}
	var parts []string
	for k, n := range byKind {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	return fmt.Sprintf("[%s; oldest deletion %s ago]", strings.Join(parts, "; "), oldest.Round(time.Second))
}

// keepFailedSoakLog makes nodelet write every goroutine's stack into its
// log (SIGQUIT; it exits) and keeps the whole log under _output/soak, where
// the curves are: whether a teardown was stuck, and where, is in the stacks.
func keepFailedSoakLog(t *testing.T, n *framework.Nodelet, form string) {
	if pid := n.Pid(); pid > 0 && syscall.Kill(pid, syscall.SIGQUIT) == nil {
		for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	b, err := os.ReadFile(n.LogFile)
	if err != nil {
		t.Logf("nodelet's log: %v", err)
		return
	}
	dir := filepath.Join(framework.RepoRoot(), "_output", "soak")
	keep := filepath.Join(dir, fmt.Sprintf("nodelet-soak-%s-failed-%s.log", form, time.Now().Format("20060102-150405")))
	if err := os.MkdirAll(dir, 0o755); err == nil && os.WriteFile(keep, b, 0o644) == nil {
		t.Logf("nodelet's whole log, with every goroutine's stack at the end: %s", keep)
	}
}
