//go:build e2e

package framework

import (
	"slices"
	"testing"
)

func TestKubeadmFlags(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		want      []string
		wantErr   bool
	}{
		{"kubeadm's form", `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///tmp/x/containerd.sock --hostname-override=n1"` + "\n",
			[]string{"--container-runtime-endpoint=unix:///tmp/x/containerd.sock", "--hostname-override=n1"}, false},
		{"unquoted, other lines", "# c\nFOO=1\nKUBELET_KUBEADM_ARGS=--a=1  --b\n", []string{"--a=1", "--b"}, false},
		{"empty", `KUBELET_KUBEADM_ARGS=""`, nil, false},
		{"missing", "FOO=1\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KubeadmFlags(tc.env)
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("KubeadmFlags(%q) = %q, %v; want %q, error %v", tc.env, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
