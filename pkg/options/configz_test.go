package options

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestKubeletConfigurationInvertsTheFile: every field a file sets (the
// sample sets all supported ones) comes back from KubeletConfiguration
// with the value the file gave it, so /configz shows what is in effect.
func TestKubeletConfigurationInvertsTheFile(t *testing.T) {
	stubHostname(t, "host")
	in, err := DecodeConfig([]byte(allSupportedYAML))
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := resolveArgs(t, allSupportedYAML, "--kubeconfig=/etc/kubernetes/kubelet.conf")
	if err != nil {
		t.Fatal(err)
	}
	out := o.KubeletConfiguration()
	if out.Kind != "KubeletConfiguration" || out.APIVersion != "kubelet.config.k8s.io/v1beta1" {
		t.Errorf("type meta %+v", out.TypeMeta)
	}
	for _, path := range supportedConfigFields {
		got, want := jsonAt(t, out, path), jsonAt(t, in, path)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: /configz says %v, the file said %v", path, got, want)
		}
	}
}

// TestKubeletConfigurationOmitsWhatIsNotHonoured: a field nodelet ignores
// is not claimed at upstream's default.
func TestKubeletConfigurationOmitsWhatIsNotHonoured(t *testing.T) {
	b, err := json.Marshal(Defaults().KubeletConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"cpuManagerPolicy"`, `"evictionSoft"`, `"topologyManagerPolicy"`} {
		if strings.Contains(string(b), field) {
			t.Errorf("%s in %s", field, b)
		}
	}
}

// jsonAt is the JSON value at the dotted path of v.
func jsonAt(t *testing.T, v any, path string) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range strings.Split(path, ".") {
		obj, _ := m.(map[string]any)
		m = obj[key]
	}
	return m
}
