package volumes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDownwardResourceFiles(t *testing.T) {
	q := resource.MustParse
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceMemory: q("32Mi")}}}},
			Containers: []v1.Container{
				{Name: "app", Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{v1.ResourceCPU: q("1250m"), v1.ResourceMemory: q("64Mi"),
						v1.ResourceEphemeralStorage: q("1Gi"), "hugepages-2Mi": q("4Mi")},
					Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("32Mi"),
						v1.ResourceEphemeralStorage: q("512Mi")}}},
				{Name: "bare"},
			},
		},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("4Gi"), v1.ResourceEphemeralStorage: q("10Gi")}
	tests := []struct {
		name, container, res, divisor, want string
	}{
		{name: "cpu limit rounds up to cores", container: "app", res: "limits.cpu", want: "2"},
		{name: "cpu limit in millicores", container: "app", res: "limits.cpu", divisor: "1m", want: "1250"},
		{name: "cpu request rounds up", container: "app", res: "requests.cpu", want: "1"},
		{name: "memory limit in bytes", container: "app", res: "limits.memory", want: "67108864"},
		{name: "memory request in Mi", container: "app", res: "requests.memory", divisor: "1Mi", want: "32"},
		{name: "ephemeral storage limit", container: "app", res: "limits.ephemeral-storage", divisor: "1Mi", want: "1024"},
		{name: "ephemeral storage request", container: "app", res: "requests.ephemeral-storage", divisor: "1Mi", want: "512"},
		{name: "huge pages limit", container: "app", res: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{name: "divisor 0 means 1", container: "app", res: "limits.memory", divisor: "0", want: "67108864"},
		{name: "unset cpu limit is node allocatable", container: "bare", res: "limits.cpu", want: "2"},
		{name: "unset memory limit is node allocatable", container: "bare", res: "limits.memory", divisor: "1Gi", want: "4"},
		{name: "unset storage limit is node allocatable", container: "bare", res: "limits.ephemeral-storage", divisor: "1Gi", want: "10"},
		{name: "unset request is 0", container: "bare", res: "requests.memory", want: "0"},
		{name: "init container", container: "init", res: "limits.memory", divisor: "1Mi", want: "32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel := &v1.ResourceFieldSelector{ContainerName: tt.container, Resource: tt.res}
			if tt.divisor != "" {
				sel.Divisor = q(tt.divisor)
			}
			mode := int32(0o400)
			items := []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "res", ResourceFieldRef: sel, Mode: &mode},
			}
			files, err := downwardFiles(p, items, 0o644, alloc)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(files["res"].Data); got != tt.want || files["res"].Mode != 0o400 {
				t.Errorf("res = %q %v, want %q 0400", got, files["res"].Mode, tt.want)
			}
			if got := string(files["name"].Data); got != "web" {
				t.Errorf("name = %q", got)
			}
		})
	}
}

func TestDownwardChanged(t *testing.T) {
	base := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"n": "x"}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}},
			Volumes: []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
				Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}},
		},
	}
	tests := []struct {
		name   string
		modify func(p *v1.Pod)
		want   bool
	}{
		{name: "same pod", modify: func(*v1.Pod) {}},
		{name: "other resource version only", modify: func(p *v1.Pod) { p.ResourceVersion = "9" }},
		{name: "status only", modify: func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }},
		{name: "label added", modify: func(p *v1.Pod) { p.Labels["b"] = "2" }, want: true},
		{name: "label changed", modify: func(p *v1.Pod) { p.Labels["a"] = "2" }, want: true},
		{name: "annotation removed", modify: func(p *v1.Pod) { p.Annotations = nil }, want: true},
		{name: "resized", modify: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")
		}, want: true},
		{name: "same quantity spelled otherwise", modify: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("1000m")
		}},
		{name: "label changed, projected downward API", modify: func(p *v1.Pod) {
			p.Labels["a"] = "2"
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{DownwardAPI: &v1.DownwardAPIProjection{Items: p.Spec.Volumes[0].DownwardAPI.Items}}}}}
		}, want: true},
		{name: "label changed, no downward API", modify: func(p *v1.Pod) {
			p.Labels["a"] = "2"
			p.Spec.Volumes = nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tt.modify(cur)
			if got := downwardChanged(base, cur); got != tt.want {
				t.Errorf("downwardChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
