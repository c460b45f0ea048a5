package cgroups

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func res(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestPodLimits(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := ctr("side", res("cpu", "100m", "memory", "32Mi"), res("cpu", "100m", "memory", "32Mi"))
	sidecar.RestartPolicy = &always
	tests := []struct {
		name string
		pod  v1.PodSpec
		pids int64
		want Limits
	}{
		{"besteffort", v1.PodSpec{Containers: []v1.Container{ctr("a", nil, nil)}}, 0,
			Limits{CPUShares: ptr(uint64(2))}},
		{"besteffort with pids", v1.PodSpec{Containers: []v1.Container{ctr("a", nil, nil)}}, 64,
			Limits{CPUShares: ptr(uint64(2)), Pids: ptr(int64(64))}},
		{"guaranteed sums containers", v1.PodSpec{Containers: []v1.Container{
			ctr("a", res("cpu", "250m", "memory", "64Mi"), res("cpu", "250m", "memory", "64Mi")),
			ctr("b", res("cpu", "250m", "memory", "64Mi"), res("cpu", "250m", "memory", "64Mi")),
		}}, 0,
			Limits{CPUShares: ptr(uint64(512)), CPUQuota: ptr(int64(50000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(128 << 20))}},
		{"guaranteed plus overhead", v1.PodSpec{
			Overhead:   res("cpu", "100m", "memory", "16Mi"),
			Containers: []v1.Container{ctr("a", res("cpu", "1", "memory", "64Mi"), res("cpu", "1", "memory", "64Mi"))},
		}, 0,
			Limits{CPUShares: ptr(uint64(1126)), CPUQuota: ptr(int64(110000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(80 << 20))}},
		{"init container larger than the app containers", v1.PodSpec{
			InitContainers: []v1.Container{ctr("i", res("cpu", "2", "memory", "1Gi"), res("cpu", "2", "memory", "1Gi"))},
			Containers:     []v1.Container{ctr("a", res("cpu", "1", "memory", "64Mi"), res("cpu", "1", "memory", "64Mi"))},
		}, 0,
			Limits{CPUShares: ptr(uint64(2048)), CPUQuota: ptr(int64(200000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(1 << 30))}},
		{"sidecar adds to the app containers", v1.PodSpec{
			InitContainers: []v1.Container{sidecar},
			Containers:     []v1.Container{ctr("a", res("cpu", "100m", "memory", "32Mi"), res("cpu", "100m", "memory", "32Mi"))},
		}, 0,
			Limits{CPUShares: ptr(uint64(204)), CPUQuota: ptr(int64(20000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(64 << 20))}},
		{"burstable with all limits", v1.PodSpec{Containers: []v1.Container{
			ctr("a", res("cpu", "100m", "memory", "32Mi"), res("cpu", "200m", "memory", "64Mi")),
		}}, 0,
			Limits{CPUShares: ptr(uint64(102)), CPUQuota: ptr(int64(20000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(64 << 20))}},
		{"burstable: one container without limits leaves the pod unlimited", v1.PodSpec{Containers: []v1.Container{
			ctr("a", res("cpu", "100m", "memory", "32Mi"), res("cpu", "200m", "memory", "64Mi")),
			ctr("b", res("cpu", "100m"), nil),
		}}, 0,
			Limits{CPUShares: ptr(uint64(204))}},
		{"burstable: memory limits only", v1.PodSpec{Containers: []v1.Container{
			ctr("a", res("memory", "32Mi"), res("memory", "64Mi")),
		}}, 10,
			Limits{CPUShares: ptr(uint64(2)), Memory: ptr(int64(64 << 20)), Pids: ptr(int64(10))}},
		{"pod-level limits", v1.PodSpec{
			Resources:  &v1.ResourceRequirements{Requests: res("cpu", "500m", "memory", "100Mi"), Limits: res("cpu", "1", "memory", "200Mi")},
			Containers: []v1.Container{ctr("a", nil, nil)},
		}, 0,
			Limits{CPUShares: ptr(uint64(512)), CPUQuota: ptr(int64(100000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(200 << 20))}},
		{"tiny limit gets the kernel's minimum quota", v1.PodSpec{Containers: []v1.Container{
			ctr("a", res("cpu", "1m", "memory", "8Mi"), res("cpu", "1m", "memory", "8Mi")),
		}}, 0,
			Limits{CPUShares: ptr(uint64(2)), CPUQuota: ptr(int64(1000)), CPUPeriod: ptr(uint64(100000)), Memory: ptr(int64(8 << 20))}},
	}
	for _, tc := range tests {
		got := PodLimits(&v1.Pod{Spec: tc.pod}, tc.pids)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, show(got), show(tc.want))
		}
	}
}

func show(l Limits) string {
	s := ""
	for _, f := range FilesV1(l) {
		s += f.Name + "=" + f.Value + " "
	}
	return s
}

func TestShares(t *testing.T) {
	for milli, want := range map[int64]uint64{0: 2, 1: 2, 100: 102, 1000: 1024, 300000: MaxShares} {
		if got := MilliCPUToShares(milli); got != want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", milli, got, want)
		}
	}
	if got := BurstableShares([]int64{100, 250}); got != 358 {
		t.Errorf("BurstableShares = %d", got)
	}
	if got := BurstableShares(nil); got != MinShares {
		t.Errorf("BurstableShares(none) = %d", got)
	}
	for milli, want := range map[int64]int64{0: 0, 1: 1000, 250: 25000, 2000: 200000} {
		if got := MilliCPUToQuota(milli, QuotaPeriod); got != want {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", milli, got, want)
		}
	}
}
