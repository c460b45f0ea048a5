package pullsecrets

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzFromSecret: any secret content and any image reference give entries
// or an error, never a panic; every parsed key can be looked up.
func FuzzFromSecret(f *testing.F) {
	f.Add([]byte(`{"auths":{"reg:5000":{"auth":"dTpw"}}}`), true, "reg:5000/app:1")
	f.Add([]byte(`{"https://index.docker.io/v1/":{"username":"u","password":"p"}}`), false, "busybox")
	f.Add([]byte(`{"*.example.com/x":{"auth":"=="}}`), false, "a.example.com/x/y@sha256:00")
	f.Add([]byte(`{"auths":{"[::1]:5000":{}}}`), true, "[::1]:5000/a")
	f.Fuzz(func(t *testing.T, data []byte, jsonType bool, image string) {
		typ, key := v1.SecretTypeDockercfg, v1.DockerConfigKey
		if jsonType {
			typ, key = v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey
		}
		entries, _, err := FromSecret(&v1.Secret{Type: typ, Data: map[string][]byte{key: data}})
		if err != nil {
			return
		}
		var k Keyring
		k.Add(entries)
		_ = k.Lookup(image)
		for _, e := range entries {
			_ = k.Lookup(e.Key + "/x")
		}
	})
}
