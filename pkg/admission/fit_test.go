package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWith(name string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func requests(cpu, mem string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		r := v1.ResourceList{}
		if cpu != "" {
			r[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			r[v1.ResourceMemory] = resource.MustParse(mem)
		}
		p.Spec.Containers[0].Resources.Requests = r
	}
}

func hostPortOn(ip string, port int32) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip})
	}
}

func TestFit(t *testing.T) {
	node := Node{
		Object: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", "kubernetes.io/hostname": "n1"}},
			Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "maint", Effect: v1.TaintEffectNoExecute}, {Key: "soft", Effect: v1.TaintEffectNoSchedule}}}},
		Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"),
			v1.ResourcePods: resource.MustParse("3"), "example.com/gpu": resource.MustParse("1"),
		},
	}
	tolerateMaint := func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	}
	busy := []*v1.Pod{podWith("a", requests("1500m", "512Mi"), hostPortOn("", 8080), tolerateMaint)}
	for _, tc := range []struct {
		name   string
		p      *v1.Pod
		active []*v1.Pod
		static bool
		reason string // "" fits
		msg    string
	}{
		{"fits", podWith("p", requests("500m", "512Mi"), tolerateMaint), busy, false, "", ""},
		{"no requests fit", podWith("p", tolerateMaint), busy, false, "", ""},
		{"cpu", podWith("p", requests("600m", ""), tolerateMaint), busy, false, "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"},
		{"memory", podWith("p", requests("", "600Mi"), tolerateMaint), busy, false, "OutOfmemory", "requested: 629145600"},
		{"cpu before memory", podWith("p", requests("3", "2Gi"), tolerateMaint), nil, false, "OutOfcpu", ""},
		{"pods", podWith("p", tolerateMaint), []*v1.Pod{podWith("a"), podWith("b"), podWith("c")}, false, "OutOfpods",
			"requested: 1, used: 3, capacity: 3"},
		{"extended resource", podWith("p", tolerateMaint, func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("2")}
		}), nil, false, "OutOfexample.com/gpu", ""},
		{"unknown extended resource is not checked", podWith("p", tolerateMaint, func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/fpga": resource.MustParse("2")}
		}), nil, false, "", ""},
		{"init container's request counts (max of init and sum of app)", podWith("p", tolerateMaint, func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2500m")}}}}
		}), nil, false, "OutOfcpu", "requested: 2500"},
		{"overhead counts", podWith("p", requests("1", ""), tolerateMaint, func(p *v1.Pod) {
			p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}
		}), nil, false, "OutOfcpu", "requested: 2500"},
		{"node selector", podWith("p", tolerateMaint, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }), nil, false,
			"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"required node affinity", podWith("p", tolerateMaint, func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"c"}}}}}}}}
		}), nil, false, "NodeAffinity", ""},
		{"matching selector", podWith("p", tolerateMaint, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }), nil, false, "", ""},
		{"node name", podWith("p", tolerateMaint, func(p *v1.Pod) { p.Spec.NodeName = "other" }), nil, false, "NodeName", ""},
		{"host port taken", podWith("p", hostPortOn("", 8080), tolerateMaint), busy, false, "NodePorts", ""},
		{"host port on a specific IP vs every address", podWith("p", hostPortOn("10.0.0.1", 8080), tolerateMaint), busy, false, "NodePorts", ""},
		{"another host port", podWith("p", hostPortOn("", 8081), tolerateMaint), busy, false, "", ""},
		{"NoExecute taint not tolerated", podWith("p"), nil, false, "TaintToleration", ""},
		{"static pods ignore taints", podWith("p"), nil, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Fit(tc.p, tc.active, node, tc.static)
			switch {
			case tc.reason == "" && r != nil:
				t.Errorf("refused: %+v", r)
			case tc.reason != "" && (r == nil || r.Reason != tc.reason || !strings.Contains(r.Message, tc.msg)):
				t.Errorf("got %+v, want %s with %q", r, tc.reason, tc.msg)
			}
			if r != nil && !IsReason(r.Reason) {
				t.Errorf("IsReason(%q) false", r.Reason)
			}
		})
	}
}
