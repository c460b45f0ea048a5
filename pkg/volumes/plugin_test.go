package volumes

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// fakeContent records what the API plugins ask of their shared content.
type fakeContent struct{ prepared, cleaned int }

func (*fakeContent) Check(pod *v1.Pod, v *v1.Volume) error { return checkVolume(pod, v) }
func (f *fakeContent) Prepare(context.Context, *v1.Pod) error {
	f.prepared++
	return nil
}
func (f *fakeContent) Cleanup(types.UID) { f.cleaned++ }

func TestFindPlugin(t *testing.T) {
	withAPI := NewRegistry(t.TempDir(), &fakeContent{})
	standalone := NewRegistry(t.TempDir(), nil)
	for _, tc := range []struct {
		name       string
		src        v1.VolumeSource
		want       string // plugin in cluster mode; "" none
		standalone bool   // a plugin without API content
	}{
		{"emptyDir", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, "emptyDir", true},
		{"hostPath", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}, "hostPath", true},
		{"configMap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}, "configMap", false},
		{"secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}, "secret", false},
		{"downwardAPI", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}, "downwardAPI", false},
		{"projected", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}, "projected", false},
		{"nfs", v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}, "", false},
		{"persistentVolumeClaim", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &v1.Volume{Name: "v", VolumeSource: tc.src}
			got := ""
			if p := withAPI.Find(v); p != nil {
				got = p.Name()
			}
			if got != tc.want {
				t.Errorf("cluster mode: plugin %q, want %q", got, tc.want)
			}
			if p := standalone.Find(v); (p != nil) != tc.standalone {
				t.Errorf("standalone: plugin %v", p)
			}
		})
	}
}

func TestPluginChecks(t *testing.T) {
	plugins := NewRegistry(t.TempDir(), &fakeContent{})
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns",
		Annotations: map[string]string{"kubernetes.io/config.source": "file"}}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		v    v1.Volume
		want string // "" no error
		// unsupported: the error wraps criconfig.ErrUnsupported.
		unsupported bool
	}{
		{"memory emptyDir", &v1.Pod{}, v1.Volume{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}, "", false},
		{"hugepages emptyDir", &v1.Pod{}, v1.Volume{Name: "h", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}}, `volume "h": emptyDir medium "HugePages"`, true},
		{"static pod's secret", static, v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}}, `volume "s": secret: a static pod cannot use API objects`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := plugins.Find(&tc.v).Check(tc.pod, &tc.v)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("Check: %v, want %q...", err, tc.want)
			}
			if errors.Is(err, criconfig.ErrUnsupported) != tc.unsupported {
				t.Errorf("Check: %v wraps ErrUnsupported: %v", err, !tc.unsupported)
			}
		})
	}
}

// The API plugins share their content: every one sets up and keeps its
// pod through it, and a tear-down has it forget the pod once.
func TestAPIPluginsShareContent(t *testing.T) {
	content := &fakeContent{}
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	r := NewRegistry(t.TempDir(), content)
	if err := r.TearDown(ctx, "u"); err != nil {
		t.Errorf("TearDown of a pod without volumes: %v", err)
	}
	for _, p := range r.plugins {
		k, ok := p.(Keeper)
		if !ok {
			continue
		}
		if err := p.SetUp(ctx, pod, &v1.Volume{}, ""); err != nil {
			t.Errorf("%s: SetUp: %v", p.Name(), err)
		}
		if err := k.KeepCurrent(ctx, pod); err != nil {
			t.Errorf("%s: KeepCurrent: %v", p.Name(), err)
		}
	}
	if content.prepared != 8 || content.cleaned != 1 {
		t.Errorf("prepared %d times, cleaned %d, want 8 and 1", content.prepared, content.cleaned)
	}
}
