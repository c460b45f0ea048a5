package admission

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	podutil "github.com/nodelet/nodelet/pkg/pod"
)

func limits(cpu, mem string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		p.Spec.Containers[0].Resources.Requests = p.Spec.Containers[0].Resources.Limits
	}
}

func priority(n int32) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Priority = &n } }

func static(p *v1.Pod) {
	p.Annotations = map[string]string{podutil.ConfigSourceAnnotationKey: podutil.FileSource}
}

func names(ps []*v1.Pod) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Name)
	}
	return strings.Join(s, ",")
}

func TestShortfall(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("3")}
	active := []*v1.Pod{podWith("a", requests("1", "1Gi")), podWith("b", requests("500m", "2Gi"))}
	got := Shortfall(podWith("new", requests("1", "2Gi")), active, alloc)
	want := []Requirement{{v1.ResourceCPU, 500}, {v1.ResourceMemory, 1 << 30}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	full := append(active, podWith("c"))
	if got := Shortfall(podWith("new"), full, alloc); !slices.Equal(got, []Requirement{{v1.ResourcePods, 1}}) {
		t.Errorf("pods: %v", got)
	}
	if got := Shortfall(podWith("new", requests("100m", "")), active, alloc); len(got) != 0 {
		t.Errorf("fits: %v", got)
	}
}

func TestPreemptees(t *testing.T) {
	be1 := podWith("be1")
	be2 := podWith("be2")
	bu1g := podWith("bu1g", requests("100m", "1Gi"))
	bu2g := podWith("bu2g", requests("100m", "2Gi"))
	g1g := podWith("g1g", limits("500m", "1Gi"))
	g3g := podWith("g3g", limits("500m", "3Gi"))
	critical := podWith("crit", static)
	criticalRunning := podWith("sys", priority(podutil.SystemCriticalPriority), requests("100m", "4Gi"))
	mem := func(s string) []Requirement {
		q := resource.MustParse(s)
		return []Requirement{{v1.ResourceMemory, q.Value()}}
	}
	tests := []struct {
		name      string
		preemptor *v1.Pod
		active    []*v1.Pod
		need      []Requirement
		want      string
		wantErr   string
	}{
		{"one burstable is enough: the nearest", critical, []*v1.Pod{be1, bu1g, bu2g, g3g}, mem("2Gi"), "bu2g", ""},
		{"smaller of two that meet it", critical, []*v1.Pod{bu2g, g3g}, mem("1Gi"), "bu2g", ""},
		{"besteffort first for the pod count", critical, []*v1.Pod{g1g, bu1g, be1}, []Requirement{{v1.ResourcePods, 1}}, "be1", ""},
		{"guaranteed when the others cannot do it, then no more", critical, []*v1.Pod{be1, bu1g, g1g, g3g}, mem("3Gi"), "g3g", ""},
		{"minimal set across two burstables", critical, []*v1.Pod{bu1g, bu2g, be2}, mem("3Gi"), "bu2g,bu1g", ""},
		{"critical pods are never preempted", critical, []*v1.Pod{criticalRunning, bu1g}, mem("2Gi"), "", "no set of running pods found to reclaim resources: [memory: 1073741824]"},
		{"lower priority preempts nothing", podWith("low", priority(10)), []*v1.Pod{podWith("high", priority(100), requests("1", "1Gi"))}, mem("1Gi"), "", "no set of running pods"},
		{"higher priority may preempt", podWith("hi", priority(100)), []*v1.Pod{podWith("lo", priority(10), requests("1", "1Gi"))}, mem("1Gi"), "lo", ""},
		{"nothing needed", critical, []*v1.Pod{be1}, nil, "", ""},
	}
	for _, tc := range tests {
		got, err := Preemptees(tc.preemptor, tc.active, tc.need)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if names(got) != tc.want {
			t.Errorf("%s: preempt %q, want %q", tc.name, names(got), tc.want)
		}
	}
}
