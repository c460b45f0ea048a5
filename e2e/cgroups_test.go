//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// qosManifest is a host-network pod of one container running script with
// the given resources (YAML flow maps, "" for none).
func qosManifest(name, requests, limits, script string) string {
	res := ""
	if requests != "" || limits != "" {
		res = "    resources:\n"
		if requests != "" {
			res += "      requests: " + requests + "\n"
		}
		if limits != "" {
			res += "      limits: " + limits + "\n"
		}
	}
	return podManifest(name, container("c", script)+res)
}

// cgroupFile reads a cgroup v1 file of cgroup rel (from the hierarchy's
// root) in the hierarchy of controller.
func cgroupFile(t *testing.T, controller, rel, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.CgroupFS, controller, rel, file))
	if err != nil {
		t.Fatalf("read cgroup file: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// cgroupGone reports whether cgroup rel is gone from every hierarchy, and
// where it is left.
func cgroupGone(rel string) (bool, string) {
	hs, err := framework.CgroupHierarchies()
	if err != nil {
		return false, err.Error()
	}
	var left []string
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, rel)); err == nil {
			left = append(left, filepath.Join(h, rel))
		}
	}
	return len(left) == 0, fmt.Sprintf("left: %v", left)
}

// procsIn lists the processes in cgroup dir and those under it, with their
// command names.
func procsIn(dir string) map[int]string {
	out := map[int]string{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			out[pid] = strings.TrimSpace(string(comm))
		}
		return nil
	})
	return out
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

func memTotal(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// requireCgroupV1 skips a test of cgroup v1 files on a cgroup v2 host:
// a host capability, not a missing part (TestPodCgroupsV2 runs there).
func requireCgroupV1(t *testing.T) {
	t.Helper()
	if framework.CgroupV2() {
		t.Skip("host capability: this host runs cgroup v2 only; the cgroup v1 files are checked on v1 hosts, TestPodCgroupsV2 checks the v2 ones")
	}
}

// TestPodCgroups: pods of the three QoS classes run in their pod cgroups
// under <root>/kubepods with upstream's limits (read from the cgroup files
// of the running pods), the QoS cgroups carry their shares, the
// containers' OOM scores follow the QoS class within what containerd
// allows, and a deleted pod's cgroup is removed from every hierarchy.
func TestPodCgroups(t *testing.T) {
	requireCgroupV1(t)
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt, "--pod-max-pids", "64")
	root := n.CgroupRoot

	n.WriteManifest("g.yaml", qosManifest("guaranteed", "{cpu: 200m, memory: 64Mi}", "{cpu: 200m, memory: 64Mi}", "sleep 3600"))
	n.WriteManifest("b.yaml", qosManifest("burstable", "{cpu: 100m, memory: 2Gi}", "{memory: 4Gi}", "sleep 3600"))
	n.WriteManifest("be.yaml", qosManifest("besteffort", "", "", "sleep 3600"))
	uids := map[string]types.UID{}
	for _, name := range []string{"guaranteed", "burstable", "besteffort"} {
		p := n.WaitPod(name+staticSuffix, 90*time.Second, "running", framework.Running)
		uids[name] = p.UID
		if string(p.Status.QOSClass) != map[string]string{"guaranteed": "Guaranteed", "burstable": "Burstable", "besteffort": "BestEffort"}[name] {
			t.Errorf("%s: QoS class %s", name, p.Status.QOSClass)
		}
	}
	pods := root + "/kubepods"
	dirs := map[string]string{
		"guaranteed": pods + "/pod" + string(uids["guaranteed"]),
		"burstable":  pods + "/burstable/pod" + string(uids["burstable"]),
		"besteffort": pods + "/besteffort/pod" + string(uids["besteffort"]),
	}
	const unlimited = "9223372036854771712" // memory.limit_in_bytes of no limit (page-rounded max)
	want := map[string]map[string]string{
		"guaranteed": {"cpu.shares": "204", "cpu.cfs_quota_us": "20000", "cpu.cfs_period_us": "100000", "memory.limit_in_bytes": strconv.Itoa(64 << 20), "pids.max": "64"},
		// No CPU limit: no quota; every container sets a memory limit.
		"burstable":  {"cpu.shares": "102", "cpu.cfs_quota_us": "-1", "memory.limit_in_bytes": strconv.Itoa(4 << 30), "pids.max": "64"},
		"besteffort": {"cpu.shares": "2", "cpu.cfs_quota_us": "-1", "memory.limit_in_bytes": unlimited, "pids.max": "64"},
	}
	controllerOf := func(file string) string { return strings.SplitN(file, ".", 2)[0] }
	for name, files := range want {
		for file, v := range files {
			if got := cgroupFile(t, controllerOf(file), dirs[name], file); got != v {
				t.Errorf("%s: %s/%s = %s, want %s", name, dirs[name], file, got, v)
			}
		}
	}
	// The QoS cgroups: burstable has its pods' requests, besteffort the minimum.
	if got := cgroupFile(t, "cpu", pods+"/burstable", "cpu.shares"); got != "102" {
		t.Errorf("burstable cpu.shares = %s, want 102 (its one pod's 100m)", got)
	}
	if got := cgroupFile(t, "cpu", pods+"/besteffort", "cpu.shares"); got != "2" {
		t.Errorf("besteffort cpu.shares = %s, want 2", got)
	}

	// The containers run in their pod's cgroup, and their OOM scores follow
	// the class. containerd (restrict_oom_score_adj, required here) raises
	// a score below its own to its own: the Guaranteed -997 ends up there.
	containerdAdj := readInt(t, "/proc/"+strings.TrimSpace(mustRead(t, filepath.Join(rt.StateDir, "containerd.pid")))+"/oom_score_adj")
	// 1000 less the container's request in permille of the node's memory.
	burstableAdj := 1000 - 1000*(2<<30)/memTotal(t)
	wantAdj := map[string]int64{"guaranteed": max(-997, containerdAdj), "burstable": burstableAdj, "besteffort": 1000}
	for name, dir := range dirs {
		var sleep, pause int
		for pid, comm := range procsIn(filepath.Join(framework.CgroupFS, "memory", dir)) {
			switch comm {
			case "sleep":
				sleep = pid
			case "pause":
				pause = pid
			}
		}
		if pause == 0 {
			t.Errorf("%s: no sandbox process in its pod cgroup %s", name, dir)
		} else {
			t.Logf("%s: sandbox (pause) oom_score_adj %d", name, readInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", pause)))
		}
		if sleep == 0 {
			t.Errorf("%s: no container process in its pod cgroup %s", name, dir)
			continue
		}
		if got := readInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", sleep)); got != wantAdj[name] {
			t.Errorf("%s: oom_score_adj %d, want %d (containerd's own is %d)", name, got, wantAdj[name], containerdAdj)
		}
		t.Logf("MEASURE %s container oom_score_adj %d (asked: %d)", name, readInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", sleep)),
			map[string]int64{"guaranteed": -997, "burstable": burstableAdj, "besteffort": 1000}[name])
	}

	// A deleted pod's cgroup goes, in every hierarchy, and the burstable
	// cgroup's shares drop back.
	n.RemoveManifest("b.yaml")
	n.WaitPod("burstable"+staticSuffix, 60*time.Second, "pod gone", func(p *v1.Pod) bool { return p == nil })
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "burstable pod cgroup removed", func() (bool, string) {
		return cgroupGone(dirs["burstable"])
	})
	// The shares are written right after the pod cgroup's last directory
	// goes, so the test can look in between.
	poll.Until(t, 10*time.Second, 50*time.Millisecond, "burstable cpu.shares back to 2 after its pod went", func() (bool, string) {
		got := cgroupFile(t, "cpu", pods+"/burstable", "cpu.shares")
		return got == "2", "cpu.shares " + got
	})
	for _, name := range []string{"guaranteed", "besteffort"} {
		if gone, _ := cgroupGone(dirs[name]); gone {
			t.Errorf("%s: cgroup removed with another pod", name)
		}
	}

	// kubelet_cgroup_manager_duration_seconds counts what was just done,
	// by upstream's operation types.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", n.ReadOnlyPort))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fams, err := parseExposition(string(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	counts := map[string]uint64{}
	for _, m := range fams["kubelet_cgroup_manager_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "operation_type" {
				counts[l.GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if counts["create"] < 3 || counts["destroy"] < 1 || counts["update"] < 1 {
		t.Errorf("kubelet_cgroup_manager_duration_seconds counts %v, want >= 3 create, 1 destroy, 1 update", counts)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPodPidsLimit: a fork bomb (bounded: 200 forks at most) is stopped
// at --pod-max-pids in its own pod - the kernel refuses its forks, and
// busybox sh gives up with exit code 2 - while another pod keeps running
// and forking.
func TestPodPidsLimit(t *testing.T) {
	requireCgroupV1(t)
	rt := framework.StartRuntime(t)
	const limit = 24
	n := framework.StartNodelet(t, rt, "--pod-max-pids", strconv.Itoa(limit))

	n.WriteManifest("steady.yaml", podManifest("steady", container("c", "while true; do date > /tmp/last; sleep 0.2; done")))
	steady := n.WaitPod("steady"+staticSuffix, 90*time.Second, "running", framework.Running)
	// echo is a shell builtin: only sleep forks.
	n.WriteManifest("bomb.yaml", podManifest("bomb", container("c",
		"i=0; while [ $i -lt 200 ]; do sleep 600 & i=$((i+1)); echo forked $i; done; echo all forked; sleep 3600")))
	bomb := n.WaitPod("bomb"+staticSuffix, 90*time.Second, "the bomb stopped by its limit", func(p *v1.Pod) bool {
		c := framework.ContainerStatus(p, "c")
		return c != nil && c.LastTerminationState.Terminated != nil
	})
	podDir := filepath.Join(framework.CgroupFS, "pids", n.CgroupRoot, "kubepods", "besteffort", "pod"+string(bomb.UID))
	if got := strings.TrimSpace(mustRead(t, filepath.Join(podDir, "pids.max"))); got != strconv.Itoa(limit) {
		t.Errorf("bomb pod pids.max = %s, want %d", got, limit)
	}
	if code := framework.ContainerStatus(bomb, "c").LastTerminationState.Terminated.ExitCode; code != 2 {
		t.Errorf("bomb exit code %d, want 2 (busybox sh: can't fork)", code)
	}
	logFile := filepath.Join(n.LogDir, fmt.Sprintf("default_%s_%s", bomb.Name, bomb.UID), "c", "0.log")
	log := mustRead(t, logFile)
	if !strings.Contains(log, "can't fork") || strings.Contains(log, "all forked") {
		t.Errorf("bomb log does not show a refused fork:\n%s", lastLines(log, 5))
	}
	forked := 0
	for _, line := range strings.Split(log, "\n") {
		if i := strings.Index(line, "forked "); i >= 0 {
			if k, err := strconv.Atoi(strings.TrimSpace(line[i+len("forked "):])); err == nil {
				forked = max(forked, k)
			}
		}
	}
	// The pod's tasks (threads): the sandbox's pause (a Go program here,
	// with its runtime's threads), the shell and its sleeps.
	if forked >= limit {
		t.Errorf("bomb forked %d processes, beyond its pod's limit %d", forked, limit)
	}
	t.Logf("MEASURE fork bomb forked %d processes before the kernel refused one (pod limit %d tasks, with the pause process's threads and the shell)", forked, limit)

	// The other pod is untouched: still running, never restarted, and its
	// loop still forks (its own cgroup is far from the limit).
	p, err := n.Pod("steady" + staticSuffix)
	if err != nil || !framework.Running(p) || framework.ContainerStatus(p, "c").RestartCount != 0 {
		t.Fatalf("steady pod after the bomb: %v %+v", err, p)
	}
	steadyDir := filepath.Join(framework.CgroupFS, "pids", n.CgroupRoot, "kubepods", "besteffort", "pod"+string(steady.UID))
	if cur := readInt(t, filepath.Join(steadyDir, "pids.current")); cur >= limit {
		t.Errorf("steady pod has %d tasks, at its limit", cur)
	}
	client := framework.CRIClient(t, rt)
	id := strings.TrimPrefix(framework.ContainerStatus(p, "c").ContainerID, "containerd://")
	stamp := func() string {
		r, err := client.ExecSync(context.Background(), id, []string{"cat", "/tmp/last"}, 10*time.Second)
		if err != nil {
			return err.Error()
		}
		return string(r.Stdout)
	}
	first := stamp()
	poll.Until(t, 30*time.Second, 200*time.Millisecond, "the steady pod's loop to go on forking", func() (bool, string) {
		now := stamp()
		return now != first, now
	})

	// Removing the bomb stops all of it and its cgroup goes.
	n.RemoveManifest("bomb.yaml")
	n.WaitPod("bomb"+staticSuffix, 60*time.Second, "pod gone", func(p *v1.Pod) bool { return p == nil })
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "bomb pod cgroup removed", func() (bool, string) {
		return cgroupGone(filepath.Join(n.CgroupRoot, "kubepods", "besteffort", "pod"+string(bomb.UID)))
	})
}

// TestPodCgroupLeftoverRemovedAtStart: a pod cgroup of a pod that is gone
// (left by a nodelet that died, with a process still in it) is removed
// once nodelet has started and its sources are ready; the process is
// killed; the cgroup of a pod that is wanted stays.
func TestPodCgroupLeftoverRemovedAtStart(t *testing.T) {
	requireCgroupV1(t)
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)
	leftover := filepath.Join(n.CgroupRoot, "kubepods", "besteffort", "pod0d1e2f3a-0000-4000-8000-00000000dead")
	hs, err := framework.CgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	// A process in the leftover cgroup, as a runtime that lost it would
	// leave it. Killed by the test's cleanup if nodelet does not.
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(exited) }()
	t.Cleanup(func() { _ = sleeper.Process.Kill(); <-exited })
	for _, h := range hs {
		cur := h
		for _, part := range strings.Split(strings.Trim(leftover, "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if strings.HasSuffix(h, "/cpuset") {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if b, _ := os.ReadFile(filepath.Join(cur, f)); strings.TrimSpace(string(b)) == "" {
						pb, _ := os.ReadFile(filepath.Join(parent, f))
						_ = os.WriteFile(filepath.Join(cur, f), pb, 0o644)
					}
				}
			}
		}
		if err := os.WriteFile(filepath.Join(cur, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move the process into %s: %v", cur, err)
		}
	}
	n.WriteManifest("keep.yaml", podManifest("keep", container("c", "sleep 3600")))
	n.Start()
	keep := n.WaitPod("keep"+staticSuffix, 90*time.Second, "running", framework.Running)
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "leftover pod cgroup removed", func() (bool, string) {
		return cgroupGone(leftover)
	})
	select {
	case <-exited:
	default:
		poll.Until(t, 10*time.Second, 50*time.Millisecond, "the leftover's process killed", func() (bool, string) {
			select {
			case <-exited:
				return true, ""
			default:
				return false, "still running"
			}
		})
	}
	if !strings.Contains(n.Log(), "Removed the cgroup of a pod no longer on the node") {
		t.Errorf("nodelet did not log the removal")
	}
	if gone, _ := cgroupGone(filepath.Join(n.CgroupRoot, "kubepods", "besteffort", "pod"+string(keep.UID))); gone {
		t.Errorf("the cgroup of a wanted pod was removed")
	}
}

// TestPodCgroupsRefused: what nodelet cannot do as asked stops it at start
// with a message saying why: the systemd driver on a host without systemd
// (or at all, for now) and a cgroup root that does not exist.
func TestPodCgroupsRefused(t *testing.T) {
	rt := framework.StartRuntime(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cgroup-driver", "systemd"}, "--cgroup-driver=systemd"},
		// klog escapes the quotes around the root in the error.
		{[]string{"--cgroup-root", "/nodelet-e2e-no-such-root"}, `/nodelet-e2e-no-such-root\" does not exist in /sys/fs/cgroup/`},
	} {
		n := framework.NewNodelet(t, rt, tc.args...)
		out, err := exec.Command(n.Bin, n.Args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v, output does not say %q:\n%s", tc.args, err, tc.want, lastLines(string(out), 10))
		}
	}
}

// TestPodCgroupsV2 checks the cgroup v2 files of a Guaranteed pod's
// cgroup (cpu.weight, cpu.max, memory.max, pids.max). It runs only on a
// cgroup v2 host: this skip is about the host's capability (a v1 or
// hybrid host has no such files to read), not a missing part, so it also
// skips under CI=true; the values written are unit-tested in pkg/cgroups.
func TestPodCgroupsV2(t *testing.T) {
	if !framework.CgroupV2() {
		t.Skip("host capability: this host runs cgroup v1 (hybrid); the pod cgroup's v2 files are checked only on a cgroup v2 host (their values are unit-tested in pkg/cgroups)")
	}
	rt := framework.StartRuntime(t)
	n := framework.StartNodelet(t, rt, "--pod-max-pids", "64")
	n.WriteManifest("g.yaml", qosManifest("guaranteed", "{cpu: 200m, memory: 64Mi}", "{cpu: 200m, memory: 64Mi}", "sleep 3600"))
	p := n.WaitPod("guaranteed"+staticSuffix, 90*time.Second, "running", framework.Running)
	dir := filepath.Join(framework.CgroupFS, n.CgroupRoot, "kubepods", "pod"+string(p.UID))
	for file, want := range map[string]string{"cpu.weight": "8", "cpu.max": "20000 100000", "memory.max": strconv.Itoa(64 << 20), "pids.max": "64"} {
		if got := strings.TrimSpace(mustRead(t, filepath.Join(dir, file))); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
}

// TestPodCgroupsSurviveRestart: a restarted nodelet keeps the running
// pods' cgroups (its sweep at start spares pods that are wanted and in the
// runtime), relearns the burstable pods' requests for the burstable
// cgroup's shares, and restarts no container.
func TestPodCgroupsSurviveRestart(t *testing.T) {
	requireCgroupV1(t)
	rt := framework.StartRuntime(t)
	// --v 4: housekeeping logs its container GC pass.
	n := framework.StartNodelet(t, rt, "--v", "4")
	n.WriteManifest("b.yaml", qosManifest("burstable", "{cpu: 300m}", "", "sleep 3600"))
	p := n.WaitPod("burstable"+staticSuffix, 90*time.Second, "running", framework.Running)
	id := framework.ContainerStatus(p, "c").ContainerID
	pods := filepath.Join(n.CgroupRoot, "kubepods")
	podDir := filepath.Join(pods, "burstable", "pod"+string(p.UID))
	if got := cgroupFile(t, "cpu", filepath.Join(pods, "burstable"), "cpu.shares"); got != "307" {
		t.Fatalf("burstable cpu.shares = %s, want 307", got)
	}

	n.Stop()
	const housekeepingGC = "Housekeeping: container garbage collection"
	passesBefore := strings.Count(n.Log(), housekeepingGC)
	n.Start()
	// The restarted nodelet makes the QoS cgroups again (shares back to
	// the minimum) and counts the pod once it has synced it.
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "the burstable shares relearnt", func() (bool, string) {
		got := cgroupFile(t, "cpu", filepath.Join(pods, "burstable"), "cpu.shares")
		return got == "307", "cpu.shares " + got
	})
	// Past the first housekeeping sweep (once the manifest source is ready,
	// with container GC): the pod's cgroup is still there, its container
	// too.
	poll.Until(t, 60*time.Second, 100*time.Millisecond, "the restarted nodelet's first housekeeping pass", func() (bool, string) {
		c := strings.Count(n.Log(), housekeepingGC)
		return c > passesBefore, fmt.Sprintf("%d passes logged, %d before the restart", c, passesBefore)
	})
	if gone, _ := cgroupGone(podDir); gone {
		t.Fatalf("the running pod's cgroup was removed at restart")
	}
	if procs := procsIn(filepath.Join(framework.CgroupFS, "memory", podDir)); len(procs) == 0 {
		t.Errorf("no process left in the pod's cgroup")
	}
	p, err := n.Pod("burstable" + staticSuffix)
	if err != nil || framework.ContainerStatus(p, "c").ContainerID != id || framework.ContainerStatus(p, "c").RestartCount != 0 {
		t.Errorf("container restarted across the restart: %v %+v", err, framework.ContainerStatus(p, "c"))
	}
}
