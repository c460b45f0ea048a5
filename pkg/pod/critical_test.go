package pod

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsCritical(t *testing.T) {
	priority := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		p    *v1.Pod
		want bool
	}{
		{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, false},
		{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static", Annotations: map[string]string{ConfigSourceAnnotationKey: FileSource}}}, true},
		{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mirror", Annotations: map[string]string{ConfigMirrorAnnotationKey: "x"}}}, true},
		{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "system"}, Spec: v1.PodSpec{Priority: priority(SystemCriticalPriority)}}, true},
		{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Spec: v1.PodSpec{Priority: priority(SystemCriticalPriority - 1)}}, false},
	} {
		if got := IsCritical(tc.p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.p.Name, got, tc.want)
		}
	}
}
