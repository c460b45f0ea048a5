package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeConfig(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string // substring; "" means success
	}{
		{"yaml", header + "maxPods: 10\n", ""},
		{"json", `{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
	"maxPods": 10}`, ""},
		{"empty file", "", "missing kind"},
		{"missing kind", "apiVersion: kubelet.config.k8s.io/v1beta1\n", "missing kind"},
		{"wrong kind", "kind: Pod\napiVersion: v1\n", `kind is "Pod", want "KubeletConfiguration"`},
		{"missing apiVersion", "kind: KubeletConfiguration\n", "missing apiVersion"},
		{"wrong apiVersion", "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1alpha1\n",
			`apiVersion is "kubelet.config.k8s.io/v1alpha1", want "kubelet.config.k8s.io/v1beta1"`},
		{"unknown field", header + "maxPodz: 10\n", `unknown field "maxPodz"`},
		{"unknown nested field", header + "authentication: {x509: {clientCA: /ca}}\n", `unknown field "authentication.x509.clientCA"`},
		{"case mismatch is unknown", header + "MaxPods: 10\n", `unknown field "MaxPods"`},
		{"duplicate field", header + "maxPods: 10\nmaxPods: 11\n", "maxPods"},
		{"duplicate field json", `{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1", "maxPods": 1, "maxPods": 2}`, `duplicate field "maxPods"`},
		{"wrong type", header + "maxPods: lots\n", "maxPods"},
		{"not yaml", "kind: [\n", "parsing YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := DecodeConfig([]byte(tc.data))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if kc.MaxPods != 10 {
					t.Errorf("maxPods = %d, want 10", kc.MaxPods)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubelet.yaml")
	body := header + "staticPodPath: manifests\ntlsCertFile: /abs/tls.crt\nresolvConf: \"\"\nauthentication: {x509: {clientCAFile: pki/ca.crt}}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	kc, err := LoadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{kc.StaticPodPath, filepath.Join(dir, "manifests")},
		{kc.TLSCertFile, "/abs/tls.crt"},
		{kc.Authentication.X509.ClientCAFile, filepath.Join(dir, "pki/ca.crt")},
		{*kc.ResolverConfig, ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}

	if _, err := LoadConfigFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: err = %v, want it to name the file", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(header+"cpuManagerPolicyy: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfigFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `"cpuManagerPolicyy"`) {
		t.Errorf("bad file: err = %v, want it to name the file and the field", err)
	}
}
