package volumes

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/pkg/pod"
)

func TestPlainVolumeFiles(t *testing.T) {
	pr := fakeProjector{
		configMaps: map[string]*v1.ConfigMap{"cfg": {
			Data:       map[string]string{"a.conf": "A", "b.conf": "B"},
			BinaryData: map[string][]byte{"bin": {0, 1, 2}},
		}},
		secrets: map[string]*v1.Secret{"creds": {Data: map[string][]byte{"user": []byte("alice"), "pw": []byte("s3cret")}}},
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: map[string]string{"app": "web"}}}
	type file struct {
		data string
		mode os.FileMode
	}
	tests := []struct {
		name    string
		vol     v1.VolumeSource
		want    map[string]file
		wantErr string
	}{
		{name: "configMap, every key, default mode", vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			want: map[string]file{"a.conf": {"A", 0o644}, "b.conf": {"B", 0o644}, "bin": {"\x00\x01\x02", 0o644}}},
		{name: "configMap items, path and mode", vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o400),
			Items: []v1.KeyToPath{{Key: "a.conf", Path: "etc/a"}, {Key: "bin", Path: "b", Mode: ptr.To[int32](0o755)}}}},
			want: map[string]file{"etc/a": {"A", 0o400}, "b": {"\x00\x01\x02", 0o755}}},
		{name: "configMap missing key", vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "nope", Path: "x"}}}},
			wantErr: `no key "nope"`},
		{name: "missing configMap", vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}},
			wantErr: `configmaps "gone" not found`},
		{name: "missing optional configMap is empty", vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
			want: map[string]file{}},
		{name: "secret with defaultMode", vol: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
			SecretName: "creds", DefaultMode: ptr.To[int32](0o440)}},
			want: map[string]file{"user": {"alice", 0o440}, "pw": {"s3cret", 0o440}}},
		{name: "missing secret", vol: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "gone"}},
			wantErr: `secrets "gone" not found`},
		{name: "missing optional secret is empty", vol: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
			SecretName: "gone", Optional: ptr.To(true)}},
			want: map[string]file{}},
		{name: "downwardAPI", vol: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}, Mode: ptr.To[int32](0o600)}}}},
			want: map[string]file{"labels": {`app="web"`, 0o644}, "ns": {"prod", 0o600}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &v1.Volume{Name: "v", VolumeSource: tt.vol}
			src, ok := asProjection(v)
			if !ok {
				t.Fatal("not an API volume")
			}
			files, err := projectedFiles(context.Background(), pr, p, src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tt.want) {
				t.Errorf("files = %v, want %v", files, tt.want)
			}
			for path, w := range tt.want {
				f, ok := files[path]
				if !ok || string(f.Data) != w.data || f.Mode != w.mode {
					t.Errorf("%s = %q %o, want %q %o", path, f.Data, f.Mode, w.data, w.mode)
				}
			}
		})
	}
}

func TestCheckVolumeStaticPod(t *testing.T) {
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.FileSource}}}
	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{pod.ConfigSourceAnnotationKey: pod.ApiserverSource}}}
	cm := &v1.Volume{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}
	sec := &v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}}
	down := &v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}
	nfs := &v1.Volume{Name: "n", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}}
	for _, v := range []*v1.Volume{cm, sec, down} {
		if err := checkVolume(api, v); err != nil {
			t.Errorf("API pod, %s: %v", v.Name, err)
		}
	}
	for _, v := range []*v1.Volume{cm, sec} {
		if err := checkVolume(static, v); err == nil || !strings.Contains(err.Error(), "static pod cannot use API objects") {
			t.Errorf("static pod, %s: %v", v.Name, err)
		}
	}
	if err := checkVolume(static, down); err != nil {
		t.Errorf("static pod, downwardAPI: %v", err)
	}
	if err := checkVolume(api, nfs); err == nil {
		t.Error("nfs accepted")
	}
}
