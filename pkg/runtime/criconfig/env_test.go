package criconfig

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cmKey(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func secretKey(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func TestContainerEnv(t *testing.T) {
	objs := &EnvObjects{
		ConfigMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{
			"LEVEL": "debug", "1BAD": "x", "data-1": "z", "with=eq": "y", "url": "http://$(HOST)"}}},
		Secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"PW": []byte("s3cret")}}},
	}
	service := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "HOST": "svc-host"}
	mem := resource.MustParse("64Mi")
	tests := []struct {
		name     string
		env      []v1.EnvVar
		from     []v1.EnvFromSource
		want     string // KEY=VALUE lines in order
		wantErr  string
		wantWarn string
	}{
		{name: "envFrom with prefix, invalid keys skipped, then service vars",
			from:     []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			want:     "CFG_1BAD=x CFG_LEVEL=debug CFG_data-1=z CFG_url=http://$(HOST) HOST=svc-host KUBERNETES_SERVICE_HOST=10.96.0.1",
			wantWarn: "InvalidEnvironmentVariableNames: Keys [CFG_with=eq] from the EnvFrom configMap ns/cfg were skipped"},
		{name: "env overrides envFrom in place; expansion sees envFrom and service vars",
			from: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}}},
			env:  []v1.EnvVar{{Name: "A", Value: "$(PW)@$(HOST)"}, {Name: "PW", Value: "over"}, {Name: "B", Value: "$(NOPE) $$(A)"}},
			want: "PW=over A=s3cret@svc-host B=$(NOPE) $(A) HOST=svc-host KUBERNETES_SERVICE_HOST=10.96.0.1"},
		{name: "an env var shadows a service var",
			env:  []v1.EnvVar{{Name: "HOST", Value: "mine"}},
			want: "HOST=mine KUBERNETES_SERVICE_HOST=10.96.0.1"},
		{name: "key refs",
			env:  []v1.EnvVar{{Name: "L", ValueFrom: cmKey("cfg", "LEVEL", false)}, {Name: "P", ValueFrom: secretKey("sec", "PW", false)}},
			want: "L=debug P=s3cret HOST=svc-host KUBERNETES_SERVICE_HOST=10.96.0.1"},
		{name: "optional refs to missing objects and keys are not set",
			env: []v1.EnvVar{{Name: "A", ValueFrom: cmKey("gone", "x", true)}, {Name: "B", ValueFrom: cmKey("cfg", "nokey", true)},
				{Name: "C", ValueFrom: secretKey("gone", "x", true)}, {Name: "D", ValueFrom: secretKey("sec", "nokey", true)}},
			from: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: boolPtr(true)}}},
			want: "HOST=svc-host KUBERNETES_SERVICE_HOST=10.96.0.1"},
		{name: "missing configmap", env: []v1.EnvVar{{Name: "A", ValueFrom: cmKey("gone", "x", false)}},
			wantErr: `env "A": configmap "gone" not found`},
		{name: "missing key", env: []v1.EnvVar{{Name: "A", ValueFrom: cmKey("cfg", "x", false)}},
			wantErr: `couldn't find key x in ConfigMap ns/cfg`},
		{name: "missing secret key", env: []v1.EnvVar{{Name: "A", ValueFrom: secretKey("sec", "x", false)}},
			wantErr: `couldn't find key x in Secret ns/sec`},
		{name: "missing envFrom secret",
			from:    []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}}},
			wantErr: `secret "gone" not found`},
		{name: "resource fields", env: []v1.EnvVar{
			{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "CPU_M", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "MEM_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "MEM_REQ", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.memory"}}},
			{Name: "EPH", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}}},
		}, want: "CPU_LIMIT=1 CPU_M=250 MEM_MI=64 MEM_REQ=0 EPH=10 HOST=svc-host KUBERNETES_SERVICE_HOST=10.96.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{"kubernetes.io/config.source": "api"}}}
			c := &v1.Container{Name: "c", Env: tt.env, EnvFrom: tt.from, Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: mem},
			}}
			var warns []string
			opts := ConfigOptions{ServiceEnv: func(*v1.Pod) (map[string]string, error) { return service, nil },
				NodeAllocatable: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Gi"), v1.ResourceCPU: resource.MustParse("2")}}
			env, err := ContainerEnv(pod, c, ContainerParams{EnvObjects: objs, Warn: func(r, m string) { warns = append(warns, r+": "+m) }}, opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range env {
				got = append(got, kv.Key+"="+string(kv.Value))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("env\n got %s\nwant %s", g, tt.want)
			}
			if w := strings.Join(warns, "\n"); !strings.Contains(w, tt.wantWarn) || (tt.wantWarn == "" && w != "") {
				t.Errorf("warnings %q, want %q", w, tt.wantWarn)
			}
		})
	}
}

func TestIsEnvVarName(t *testing.T) {
	for s, want := range map[string]bool{"A": true, "1a.b-c": true, "with space": true, "": false, "a=b": false, "tab\t": false, "é": false} {
		if got := IsEnvVarName(s); got != want {
			t.Errorf("IsEnvVarName(%q) = %v", s, got)
		}
	}
}

func boolPtr(b bool) *bool { return &b }

func TestEnvObjectRefs(t *testing.T) {
	c := &v1.Container{
		EnvFrom: []v1.EnvFromSource{
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}},
		},
		Env: []v1.EnvVar{
			{Name: "A", Value: "x"},
			{Name: "B", ValueFrom: cmKey("c", "k", false)},
			{Name: "C", ValueFrom: secretKey("s2", "k", true)},
			{Name: "D", ValueFrom: cmKey("s", "k", false)}, // a config map named like a secret
		},
	}
	got := EnvObjectRefs(c)
	want := []EnvObjectRef{{KindSecret, "s"}, {KindConfigMap, "c"}, {KindSecret, "s2"}, {KindConfigMap, "s"}}
	if !slices.Equal(got, want) {
		t.Errorf("refs = %v, want %v", got, want)
	}
	if got := EnvObjectRefs(&v1.Container{}); got != nil {
		t.Errorf("no refs = %v", got)
	}
}
