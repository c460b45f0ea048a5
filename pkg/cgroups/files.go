package cgroups

import "strconv"

// File is one cgroup interface file to write, relative to the cgroup's
// directory in the hierarchy of Controller (cgroup v1), or in the one
// hierarchy (v2, Controller is the controller that must be enabled for it).
type File struct {
	Controller string
	Name       string
	Value      string
}

// Controllers nodelet writes; on v2 they are enabled in the parents'
// cgroup.subtree_control.
const (
	ControllerCPU    = "cpu"
	ControllerMemory = "memory"
	ControllerPids   = "pids"
)

// FilesV1 are the cgroup v1 files carrying l, in the order to write them:
// the period before the quota (a quota is checked against the period).
func FilesV1(l Limits) []File {
	var out []File
	if l.CPUShares != nil {
		out = append(out, File{ControllerCPU, "cpu.shares", strconv.FormatUint(*l.CPUShares, 10)})
	}
	if l.CPUPeriod != nil {
		out = append(out, File{ControllerCPU, "cpu.cfs_period_us", strconv.FormatUint(*l.CPUPeriod, 10)})
	}
	if l.CPUQuota != nil {
		q := *l.CPUQuota
		if q == 0 {
			q = -1 // no limit
		}
		out = append(out, File{ControllerCPU, "cpu.cfs_quota_us", strconv.FormatInt(q, 10)})
	}
	if l.Memory != nil {
		m := *l.Memory
		if m <= 0 {
			m = -1 // no limit
		}
		out = append(out, File{ControllerMemory, "memory.limit_in_bytes", strconv.FormatInt(m, 10)})
	}
	if l.Pids != nil {
		out = append(out, File{ControllerPids, "pids.max", pidsValue(*l.Pids)})
	}
	return out
}

// FilesV2 are the cgroup v2 files carrying l: cpu.weight from the shares
// (as upstream and runc convert them), cpu.max "<quota|max> <period>",
// memory.max and pids.max.
func FilesV2(l Limits) []File {
	var out []File
	if l.CPUShares != nil {
		out = append(out, File{ControllerCPU, "cpu.weight", strconv.FormatUint(SharesToWeight(*l.CPUShares), 10)})
	}
	if l.CPUQuota != nil || l.CPUPeriod != nil {
		period := uint64(QuotaPeriod)
		if l.CPUPeriod != nil {
			period = *l.CPUPeriod
		}
		quota := "max"
		if l.CPUQuota != nil && *l.CPUQuota > 0 {
			quota = strconv.FormatInt(*l.CPUQuota, 10)
		}
		out = append(out, File{ControllerCPU, "cpu.max", quota + " " + strconv.FormatUint(period, 10)})
	}
	if l.Memory != nil {
		m := "max"
		if *l.Memory > 0 {
			m = strconv.FormatInt(*l.Memory, 10)
		}
		out = append(out, File{ControllerMemory, "memory.max", m})
	}
	if l.Pids != nil {
		out = append(out, File{ControllerPids, "pids.max", pidsValue(*l.Pids)})
	}
	return out
}

func pidsValue(n int64) string {
	if n <= 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

// SharesToWeight maps cgroup v1 cpu.shares [2, 262144] onto cgroup v2
// cpu.weight [1, 10000] linearly, the conversion runc and upstream use.
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	shares = min(max(shares, MinShares), MaxShares)
	return 1 + ((shares-2)*9999)/262142
}
