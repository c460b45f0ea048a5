package options

import (
	"strings"
	"testing"
)

// FuzzConfigFile: any bytes in a --config file decode to a configuration or a
// clear error, and whatever decodes survives merging, defaulting and
// validation: options or an error, never a panic.
//
//	go test ./pkg/options -run '^$' -fuzz FuzzConfigFile -fuzztime 60s
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: /etc/kubernetes/manifests\nclusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\n",
		`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","imageGCHighThresholdPercent":80,"imageGCLowThresholdPercent":90}`,
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nauthentication:\n  anonymous:\n    enabled: false\n  x509:\n    clientCAFile: ca.crt\nauthorization:\n  mode: Webhook\nevictionHard:\n  memory.available: 100Mi\nsyncFrequency: 1m\nport: 99999\n",
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerLogMaxSize: 10Zi\nallowedUnsafeSysctls: ['kernel.*']\ntlsCipherSuites: [nope]\nreadOnlyPort: -1\nfileCheckFrequency: -5s\n",
		"kind: KubeletConfiguration\napiVersion: v1\n",
		"kind: [\n", "{", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kc, err := DecodeConfig(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		fs := NewFlagSet("nodelet")
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		o, _, err := Resolve(fs, kc)
		if err == nil && o == nil {
			t.Fatal("no options and no error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}

// FuzzFlags: any command line (arguments separated by NUL) parses and
// resolves to options or an error, never a panic.
//
//	go test ./pkg/options -run '^$' -fuzz FuzzFlags -fuzztime 60s
func FuzzFlags(f *testing.F) {
	for _, s := range []string{
		"--pod-manifest-path=/etc/kubernetes/manifests\x00--node-ip=10.0.0.1,fd00::1\x00--max-pods=10",
		"--hostname-override=Node_A\x00--root-dir\x00relative\x00--cluster-dns=1.2.3.4,::1",
		"--image-gc-high-threshold=101\x00--eviction-hard=memory.available<1Gi\x00--container-log-max-size=-1Mi",
		"--tls-cipher-suites=TLS_FOO\x00--tls-min-version=VersionTLS99\x00--port=0\x00--read-only-port=70000",
		"--sync-frequency=-1s\x00--node-labels=a=b,c\x00--register-with-taints=k=v:Bogus",
		"--allowed-unsafe-sysctls=kernel.*,net.*\x00--seccomp-default\x00--fail-swap-on=false",
		"--v=0\x00--feature-gates=Foo=true\x00-h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmdline string) {
		args := strings.Split(cmdline, "\x00")
		for _, a := range args {
			// --config would read a file named by the input; config
			// contents have their own target above.
			if strings.Contains(a, "config") || strings.HasPrefix(strings.TrimLeft(a, "-"), "v") {
				return
			}
		}
		fs := NewFlagSet("nodelet")
		if err := fs.Parse(args); err != nil {
			return
		}
		o, _, err := Resolve(fs, nil)
		if err == nil && o == nil {
			t.Fatal("no options and no error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}
