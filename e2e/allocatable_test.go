//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/e2e/framework"
)

// TestReservedCgroupsEnforced: with system-reserved and kube-reserved
// enforced, the named existing cgroups get their reservations (cpu.shares,
// memory.limit_in_bytes, pids.max, read from the cgroup files), and a
// static pod still runs under kubepods.
func TestReservedCgroupsEnforced(t *testing.T) {
	requireCgroupV1(t)
	rt := framework.StartRuntime(t)
	system, kube := framework.NewCgroupRoot(t), framework.NewCgroupRoot(t)
	n := framework.StartNodelet(t, rt,
		"--enforce-node-allocatable", "pods,system-reserved,kube-reserved",
		"--system-reserved", "cpu=250m,memory=256Mi,pid=1000", "--system-reserved-cgroup", system,
		"--kube-reserved", "cpu=500m,memory=512Mi", "--kube-reserved-cgroup", kube)
	for _, tc := range []struct{ controller, cgroup, file, want string }{
		{"cpu", system, "cpu.shares", "256"},
		{"memory", system, "memory.limit_in_bytes", "268435456"},
		{"pids", system, "pids.max", "1000"},
		{"cpu", kube, "cpu.shares", "512"},
		{"memory", kube, "memory.limit_in_bytes", "536870912"},
	} {
		if got := cgroupFile(t, tc.controller, tc.cgroup, tc.file); got != tc.want {
			t.Errorf("%s/%s = %s, want %s", tc.cgroup, tc.file, got, tc.want)
		}
	}
	n.WriteManifest("p.yaml", podManifest("p", container("c", "sleep 3600")))
	n.WaitPod("p"+staticSuffix, 90*time.Second, "running", framework.Running)
}

// TestNodeAllocatableRefused: invalid enforcement settings stop nodelet
// with upstream's messages.
func TestNodeAllocatableRefused(t *testing.T) {
	rt := framework.StartRuntime(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--enforce-node-allocatable", "pods,system-reserved"}, "systemReservedCgroup (--system-reserved-cgroup) must be specified"},
		{[]string{"--enforce-node-allocatable", "kube-reserved", "--kube-reserved-cgroup", "/nodelet-alloc-no-such-cgroup"}, "does not exist"},
		{[]string{"--cgroups-per-qos=false"}, "is not supported unless cgroupsPerQOS (--cgroups-per-qos) is true"},
		{[]string{"--eviction-hard", "memory.free<1Gi"}, "unknown signal"},
	} {
		n := framework.NewNodelet(t, rt, tc.args...)
		// A nodelet that wrongly starts is stopped rather than hanging the test.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, n.Bin, n.Args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v, output does not say %q:\n%s", tc.args, err, tc.want, lastLines(string(out), 10))
		}
	}
}
