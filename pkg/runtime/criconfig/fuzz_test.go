package criconfig

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/security"
)

// FuzzPodConfig feeds arbitrary API pods (JSON, as they reach the agent from
// the API server or a manifest) through admission and the whole pod -> CRI
// translation. The API server validates what it stores, but the agent does
// not rely on that: a pod that makes any of these panic would stop the sync
// of every pod. Errors are fine; a panic or an error without a message is not.
// Seeds: testdata/fuzz/FuzzPodConfig and the ones below. Run with:
//
//	go test ./pkg/runtime/criconfig -run '^$' -fuzz FuzzPodConfig -fuzztime 60s
func FuzzPodConfig(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"web","namespace":"prod","uid":"u1"},"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":80,"hostPort":8080}]}]}}`,
		`{"metadata":{"name":"a.b","namespace":"d","uid":"u"},"spec":{"hostname":"h","subdomain":"s","setHostnameAsFQDN":true,"dnsPolicy":"None","dnsConfig":{"nameservers":["1.1.1.1"],"searches":["x"],"options":[{"name":"ndots","value":"2"}]},"containers":[{"name":"c","image":"i"}]}}`,
		`{"metadata":{"name":"p","namespace":"n","uid":"u"},"spec":{"securityContext":{"runAsUser":1000,"runAsGroup":5,"fsGroup":7,"supplementalGroups":[1,2],"sysctls":[{"name":"net.ipv4.ip_forward","value":"1"}],"seccompProfile":{"type":"Localhost","localhostProfile":"../x"}},"containers":[{"name":"c","image":"i","securityContext":{"privileged":true,"capabilities":{"add":["ALL"],"drop":["NET_RAW"]},"procMount":"Unmasked","readOnlyRootFilesystem":true,"appArmorProfile":{"type":"Localhost","localhostProfile":"p"}}}]}}`,
		`{"metadata":{"name":"p","namespace":"n","uid":"u","labels":{"a":"b"},"annotations":{"x":"y"}},"spec":{"volumes":[{"name":"v","emptyDir":{"medium":"Memory"}},{"name":"h","hostPath":{"path":"/tmp/../etc","type":"DirectoryOrCreate"}},{"name":"cm","configMap":{"name":"c","items":[{"key":"k","path":"../../k"}]}}],"containers":[{"name":"c","image":"i","volumeMounts":[{"name":"v","mountPath":"/v","subPath":"../a"},{"name":"h","mountPath":"/h","subPathExpr":"$(POD_NAME)/x","mountPropagation":"Bidirectional"}],"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},{"name":"IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIPs"}}},{"name":"L","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['a']"}}},{"name":"R","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":"1Mi"}}},{"name":"E","value":"$(POD_NAME)-$$(X)-$(UNSET"}],"envFrom":[{"prefix":"P_","configMapRef":{"name":"cm","optional":true}}]}]}}`,
		`{"metadata":{"name":"p","namespace":"n","uid":"u"},"spec":{"os":{"name":"windows"},"hostNetwork":true,"hostPID":true,"hostIPC":true,"initContainers":[{"name":"i","image":"i","restartPolicy":"Always"}],"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"100m","memory":"1Gi","hugepages-2Mi":"2Mi"},"requests":{"cpu":"-1"}},"command":["$(A)"],"args":["$(B)"]}],"ephemeralContainers":[{"name":"e","image":"i","targetContainerName":"c"}]}}`,
		`{}`,
		`{"spec":{"containers":[{}]}}`,
	} {
		f.Add([]byte(s), "10.0.0.5")
	}
	opts := testOpts
	opts.ClusterDNS = []string{"10.96.0.10"}
	opts.ClusterDomain = "cluster.local"
	opts.MaskedPaths = MaskedPaths()
	sysctls, err := security.NewSysctlAllowlist(append(security.SafeSysctls("6.1.0"), "net.*"))
	if err != nil {
		f.Fatal(err)
	}
	node := security.Node{Sysctls: sysctls}
	f.Fuzz(func(t *testing.T, data []byte, podIP string) {
		var pod v1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			return
		}
		_ = security.Admit(&pod, node)
		check := func(what string, err error) {
			if err != nil && err.Error() == "" {
				t.Fatalf("%s: empty error message", what)
			}
		}
		_, err := SandboxConfig(&pod, 0, SandboxResources{}, opts)
		check("sandbox config", err)
		_, err = HostsFile(&pod, []string{podIP}, []byte("127.0.0.1 localhost\n"), opts.ClusterDomain)
		check("hosts file", err)
		_, err = VolumePaths(&pod, opts)
		check("volume paths", err)
		check("volumes", CheckVolumes(&pod))
		for _, c := range AllContainers(&pod) {
			_ = EnvObjectRefs(c)
			_, _, err := ContainerConfig(&pod, c, ContainerParams{PodIPs: []string{podIP}}, opts)
			check("container config "+c.Name, err)
		}
	})
}
