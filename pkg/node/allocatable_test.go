package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/eviction"
)

func TestAllocatableReservedAndHardEviction(t *testing.T) {
	thresholds := func(flag string) []eviction.Threshold {
		m, err := eviction.ParseFlag(flag)
		if err != nil {
			t.Fatal(err)
		}
		ths, err := eviction.ParseMap(m)
		if err != nil {
			t.Fatal(err)
		}
		if ths == nil {
			ths = []eviction.Threshold{}
		}
		return ths
	}
	tests := []struct {
		name                 string
		reserved             v1.ResourceList
		hard                 []eviction.Threshold
		cpu, memory, storage string
	}{
		{"upstream defaults", nil, nil, "2", "8092Mi", "90Gi"},
		{"no thresholds", nil, []eviction.Threshold{}, "2", "8Gi", "100Gi"},
		{"reserved and thresholds", v1.ResourceList{
			v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("1Gi"), v1.ResourceEphemeralStorage: q("10Gi"), "pid": q("100"),
		}, thresholds("memory.available<1Gi,nodefs.available<20%,imagefs.available<15%"), "1500m", "6Gi", "70Gi"},
		{"percentage of memory", nil, thresholds("memory.available<50%"), "2", "4Gi", "100Gi"},
		{"floored at zero", v1.ResourceList{v1.ResourceCPU: q("3")}, []eviction.Threshold{}, "0", "8Gi", "100Gi"},
	}
	for _, tc := range tests {
		cfg := testConfig()
		cfg.Reserved, cfg.HardEviction = tc.reserved, tc.hard
		f := healthyFacts()
		f.Machine.CPUs, f.Machine.MemoryBytes, f.Machine.EphemeralStorageBytes = 2, 8<<30, 100<<30
		st := DesiredStatus(cfg, f, v1.NodeStatus{}, t0)
		for name, want := range map[v1.ResourceName]string{v1.ResourceCPU: tc.cpu, v1.ResourceMemory: tc.memory, v1.ResourceEphemeralStorage: tc.storage} {
			if got := st.Allocatable[name]; got.Cmp(q(want)) != 0 {
				t.Errorf("%s: allocatable %s %s, want %s", tc.name, name, got.String(), want)
			}
		}
		if _, ok := st.Allocatable["pid"]; ok {
			t.Errorf("%s: pid in allocatable", tc.name)
		}
		if got := st.Allocatable[v1.ResourcePods]; got.Cmp(st.Capacity[v1.ResourcePods]) != 0 {
			t.Errorf("%s: pods %s, want capacity", tc.name, got.String())
		}
	}
}

func TestMemoryPressureFollowsThreshold(t *testing.T) {
	f := healthyFacts()
	f.Machine.MemoryBytes = 8 << 30
	f.MemoryAvailable = 500 << 20
	cfg := testConfig()
	if c := memoryCondition(f, hardEviction(cfg)); c.Status != v1.ConditionFalse {
		t.Errorf("default 100Mi threshold, 500Mi free: %s", c.Status)
	}
	m, _ := eviction.ParseFlag("memory.available<1Gi")
	cfg.HardEviction, _ = eviction.ParseMap(m)
	if c := memoryCondition(f, hardEviction(cfg)); c.Status != v1.ConditionTrue {
		t.Errorf("1Gi threshold, 500Mi free: %s", c.Status)
	}
	cfg.HardEviction = []eviction.Threshold{}
	if c := memoryCondition(f, hardEviction(cfg)); c.Status != v1.ConditionFalse {
		t.Errorf("no threshold: %s", c.Status)
	}
}
