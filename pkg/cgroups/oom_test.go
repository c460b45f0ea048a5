package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podutil "github.com/nodelet/nodelet/pkg/pod"
)

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 1000 << 20 // 1000 MiB: a request of N MiB is N permille
	always := v1.ContainerRestartPolicyAlways
	guaranteed := ctr("g", res("cpu", "1", "memory", "100Mi"), res("cpu", "1", "memory", "100Mi"))
	burst := func(name, mem string) v1.Container { return ctr(name, res("memory", mem), nil) }
	side := burst("side", "10Mi")
	side.RestartPolicy = &always
	prio := podutil.SystemCriticalPriority
	tests := []struct {
		name     string
		pod      v1.Pod
		ctr      string
		capacity int64
		want     int64
	}{
		{"guaranteed", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{guaranteed}}}, "g", capacity, -997},
		{"besteffort", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("b", nil, nil)}}}, "b", capacity, 1000},
		{"burstable: 1000 less its permille", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burst("a", "100Mi")}}}, "a", capacity, 900},
		{"burstable without memory request", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", res("cpu", "1"), nil)}}}, "a", capacity, 999},
		{"burstable asking for all memory stays above guaranteed", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burst("a", "1000Mi")}}}, "a", capacity, 3},
		{"burstable with unknown capacity", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burst("a", "100Mi")}}}, "a", 0, 999},
		{"sidecar scored like the smallest app container", v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{side},
			Containers:     []v1.Container{burst("a", "300Mi"), burst("b", "200Mi")},
		}}, "side", capacity, 800},
		{"pod-level request shared among the containers", v1.Pod{Spec: v1.PodSpec{
			Resources:  &v1.ResourceRequirements{Requests: res("memory", "300Mi")},
			Containers: []v1.Container{burst("a", "100Mi"), ctr("b", nil, nil)},
		}}, "a", capacity, 800},
		{"node-critical static pod", v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/config.source": "file"}},
			Spec:       v1.PodSpec{PriorityClassName: systemNodeCritical, Containers: []v1.Container{ctr("b", nil, nil)}},
		}, "b", capacity, -997},
		{"node-critical by priority", v1.Pod{
			Spec: v1.PodSpec{PriorityClassName: systemNodeCritical, Priority: &prio, Containers: []v1.Container{ctr("b", nil, nil)}},
		}, "b", capacity, -997},
		{"the class name alone is not critical", v1.Pod{
			Spec: v1.PodSpec{PriorityClassName: systemNodeCritical, Containers: []v1.Container{ctr("b", nil, nil)}},
		}, "b", capacity, 1000},
	}
	for _, tc := range tests {
		var c *v1.Container
		for _, cs := range [][]v1.Container{tc.pod.Spec.InitContainers, tc.pod.Spec.Containers} {
			for i := range cs {
				if cs[i].Name == tc.ctr {
					c = &cs[i]
				}
			}
		}
		if got := OOMScoreAdj(&tc.pod, c, tc.capacity); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
