package volumes

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

func TestFieldValue(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "web", Namespace: "prod", UID: "u-1",
		Labels:      map[string]string{"b": "2", "a": "x\"y\nz"},
		Annotations: map[string]string{"note": "hi"},
	}}
	tests := []struct {
		path, want  string
		unsupported bool
	}{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "prod"},
		{path: "metadata.uid", want: "u-1"},
		{path: "metadata.labels", want: "a=\"x\\\"y\\nz\"\nb=\"2\""},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations", want: `note="hi"`},
		{path: "metadata.annotations['note']", want: "hi"},
		{path: "spec.nodeName", unsupported: true},
		{path: "metadata.name['x']", unsupported: true},
		{path: "metadata.labels['']", unsupported: true},
		{path: "status.podIP", unsupported: true},
	}
	for _, tt := range tests {
		got, err := fieldValue(p, tt.path)
		if tt.unsupported {
			if !errors.Is(err, criconfig.ErrUnsupported) {
				t.Errorf("%s: err = %v, want unsupported", tt.path, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	if got := formatMap(nil); got != "" {
		t.Errorf("formatMap(nil) = %q", got)
	}
}

func TestKeyFiles(t *testing.T) {
	data := map[string][]byte{"a": []byte("A"), "b": []byte("B")}
	tests := []struct {
		name     string
		items    []v1.KeyToPath
		optional bool
		want     map[string]File
		wantErr  string
	}{
		{name: "all keys, default mode", want: map[string]File{"a": {[]byte("A"), 0o644}, "b": {[]byte("B"), 0o644}}},
		{name: "items with paths and modes",
			items: []v1.KeyToPath{{Key: "a", Path: "dir/x"}, {Key: "b", Path: "y", Mode: ptr.To[int32](0o400)}},
			want:  map[string]File{"dir/x": {[]byte("A"), 0o644}, "y": {[]byte("B"), 0o400}}},
		{name: "missing key fails", items: []v1.KeyToPath{{Key: "c", Path: "c"}}, wantErr: `no key "c"`},
		{name: "missing key of optional source is skipped", optional: true,
			items: []v1.KeyToPath{{Key: "c", Path: "c"}, {Key: "a", Path: "a"}},
			want:  map[string]File{"a": {[]byte("A"), 0o644}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keyFiles(data, tt.items, tt.optional, 0o644)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if g := got[k]; string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %+v, want %+v", k, g, w)
				}
			}
		})
	}
}

// fakeProjector serves fixed objects.
type fakeProjector struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	tok        string
	tokErr     error
}

func (f fakeProjector) configMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.configMaps[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f fakeProjector) secret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f fakeProjector) token(context.Context, *v1.Pod, *v1.ServiceAccountTokenProjection) (string, error) {
	return f.tok, f.tokErr
}

// allocatable: a node of 4 CPUs and 8 GiB.
func (fakeProjector) allocatable() v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
}

// kubeAPIAccess is the volume the ServiceAccount admission plugin adds.
func kubeAPIAccess() *v1.ProjectedVolumeSource {
	return &v1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			}}},
		},
	}
}

func TestProjectedFiles(t *testing.T) {
	pr := fakeProjector{
		configMaps: map[string]*v1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}},
		secrets:    map[string]*v1.Secret{"creds": {Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}}},
		tok:        "TOKEN",
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1"}}
	withResources := p.DeepCopy()
	withResources.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
	}}}
	resField := func(path, res, divisor string) v1.DownwardAPIVolumeFile {
		sel := &v1.ResourceFieldSelector{ContainerName: "app", Resource: res}
		if divisor != "" {
			sel.Divisor = resource.MustParse(divisor)
		}
		return v1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: sel}
	}
	withFSGroup := p.DeepCopy()
	withFSGroup.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}

	tests := []struct {
		name    string
		pod     *v1.Pod
		src     *v1.ProjectedVolumeSource
		pr      projector
		want    map[string]File
		wantErr string
	}{
		{name: "kube-api-access", pod: p, src: kubeAPIAccess(), pr: pr, want: map[string]File{
			"token": {[]byte("TOKEN"), 0o644}, "ca.crt": {[]byte("CA"), 0o644}, "namespace": {[]byte("default"), 0o644}}},
		{name: "fsGroup makes the token private to owner and group", pod: withFSGroup, src: kubeAPIAccess(), pr: pr, want: map[string]File{
			"token": {[]byte("TOKEN"), 0o600}, "ca.crt": {[]byte("CA"), 0o644}, "namespace": {[]byte("default"), 0o644}}},
		{name: "default mode when unset, secret with items", pod: p, pr: pr,
			src: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: "creds"},
				Items:                []v1.KeyToPath{{Key: "user", Path: "u", Mode: ptr.To[int32](0o400)}, {Key: "pass", Path: "p"}},
			}}}},
			want: map[string]File{"u": {[]byte("u"), 0o400}, "p": {[]byte("p"), 0o644}}},
		{name: "missing optional config map gives nothing", pod: p, pr: pr,
			src: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}}},
			want: map[string]File{}},
		{name: "missing config map fails", pod: p, pr: pr,
			src: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}}},
			wantErr: `configmaps "absent" not found`},
		{name: "resourceFieldRef: limits, requests, node allocatable for an unset limit", pod: withResources, pr: pr,
			src: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				resField("mem_limit", "limits.memory", "1Mi"), resField("cpu_request", "requests.cpu", "1m"),
				resField("cpu_limit", "limits.cpu", ""), resField("mem_request", "requests.memory", ""),
			}}}}},
			want: map[string]File{"mem_limit": {[]byte("64"), 0o644}, "cpu_request": {[]byte("250"), 0o644},
				"cpu_limit": {[]byte("4"), 0o644}, "mem_request": {[]byte("0"), 0o644}}},
		{name: "resourceFieldRef of an unknown container fails", pod: p, pr: pr,
			src: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				resField("cpu", "limits.cpu", "")}}}}},
			wantErr: `no container "app" in the pod`},
		{name: "token failure fails", pod: p, src: kubeAPIAccess(), pr: fakeProjector{tokErr: errors.New("forbidden")}, wantErr: "forbidden"},
		{name: "same path twice fails", pod: p, pr: pr,
			src: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}}},
			}},
			wantErr: `path "x" is projected twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := projectedFiles(context.Background(), tt.pr, tt.pod, tt.src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if g := got[k]; string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %q %v, want %q %v", k, g.Data, g.Mode, w.Data, w.Mode)
				}
			}
		})
	}
}

func TestCheckProjected(t *testing.T) {
	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default",
		Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.ApiserverSource}}}
	static := api.DeepCopy()
	static.Annotations[pod.ConfigSourceAnnotationKey] = pod.FileSource
	downwardOnly := &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{
		Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}
	vol := func(src v1.VolumeSource) *v1.Volume { return &v1.Volume{Name: "v", VolumeSource: src} }
	withApp := api.DeepCopy()
	withApp.Spec.Containers = []v1.Container{{Name: "app"}}

	tests := []struct {
		name        string
		pod         *v1.Pod
		vol         *v1.Volume
		wantErr     string
		unsupported bool
	}{
		{name: "kube-api-access on an API pod", pod: api, vol: vol(v1.VolumeSource{Projected: kubeAPIAccess()})},
		{name: "downward API only on a static pod", pod: static, vol: vol(v1.VolumeSource{Projected: downwardOnly})},
		{name: "token on a static pod", pod: static, vol: vol(v1.VolumeSource{Projected: kubeAPIAccess()}),
			wantErr: "projected serviceAccountToken: a static pod cannot use API objects"},
		{name: "other volume type", pod: api, vol: vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}),
			wantErr: "volume type configMap not supported yet", unsupported: true},
		{name: "cluster trust bundle", pod: api,
			vol:     vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{}}}}}),
			wantErr: "projected source clusterTrustBundle not supported yet", unsupported: true},
		{name: "resource field", pod: withApp,
			vol: vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{
				Items: []v1.DownwardAPIVolumeFile{{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}}}}}}}})},
		{name: "resource field without a container name", pod: withApp,
			vol: vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{
				Items: []v1.DownwardAPIVolumeFile{{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}}}}}}}),
			wantErr: `projected downwardAPI "cpu": resourceFieldRef "limits.cpu": no containerName`},
		{name: "resource field of an unknown resource", pod: withApp,
			vol: vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{
				Items: []v1.DownwardAPIVolumeFile{{Path: "gpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.nvidia.com/gpu"}}}}}}}}),
			wantErr: `projected downwardAPI "gpu": resourceFieldRef "limits.nvidia.com/gpu" not supported yet`, unsupported: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkProjected(tt.pod, tt.vol)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, criconfig.ErrUnsupported) != tt.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v", !tt.unsupported)
			}
		})
	}
}
