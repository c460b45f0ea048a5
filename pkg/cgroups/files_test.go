package cgroups

import (
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestFiles(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		v1     []File
		v2     []File
	}{
		{"nothing", Limits{}, nil, nil},
		{"guaranteed", Limits{CPUShares: ptr(uint64(512)), CPUQuota: ptr(int64(50000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(64 << 20))},
			[]File{
				{"cpu", "cpu.shares", "512"},
				{"cpu", "cpu.cfs_period_us", "100000"},
				{"cpu", "cpu.cfs_quota_us", "50000"},
				{"memory", "memory.limit_in_bytes", "67108864"},
			},
			[]File{
				{"cpu", "cpu.weight", "20"},
				{"cpu", "cpu.max", "50000 100000"},
				{"memory", "memory.max", "67108864"},
			}},
		{"unlimited quota and memory", Limits{CPUQuota: ptr(int64(0)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(0))},
			[]File{
				{"cpu", "cpu.cfs_period_us", "100000"},
				{"cpu", "cpu.cfs_quota_us", "-1"},
				{"memory", "memory.limit_in_bytes", "-1"},
			},
			[]File{
				{"cpu", "cpu.max", "max 100000"},
				{"memory", "memory.max", "max"},
			}},
		{"besteffort with pids", Limits{CPUShares: ptr(uint64(2)), Pids: ptr(int64(100))},
			[]File{{"cpu", "cpu.shares", "2"}, {"pids", "pids.max", "100"}},
			[]File{{"cpu", "cpu.weight", "1"}, {"pids", "pids.max", "100"}}},
	}
	for _, tc := range tests {
		if got := FilesV1(tc.limits); !reflect.DeepEqual(got, tc.v1) {
			t.Errorf("%s: v1 %v, want %v", tc.name, got, tc.v1)
		}
		if got := FilesV2(tc.limits); !reflect.DeepEqual(got, tc.v2) {
			t.Errorf("%s: v2 %v, want %v", tc.name, got, tc.v2)
		}
	}
}

func TestSharesToWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{0: 0, 1: 1, 2: 1, 1024: 39, 262144: 10000, 1 << 20: 10000} {
		if got := SharesToWeight(shares); got != want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}
