package pullsecrets

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func secret(typ v1.SecretType, key, data string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Type:       typ,
		Data:       map[string][]byte{key: []byte(data)},
	}
}

func TestFromSecret(t *testing.T) {
	const pw = "s3cr3t-pw"
	tests := []struct {
		name    string
		secret  *v1.Secret
		want    []Entry // nil with ok false: ignored
		ok      bool
		wantErr string
	}{{
		name:   "dockerconfigjson with username and password",
		secret: secret(v1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":{"reg:5000":{"username":"u","password":"`+pw+`"}}}`),
		want:   []Entry{{Key: "reg:5000", Credential: Credential{Username: "u", Password: pw, Source: "ns/creds"}}},
		ok:     true,
	}, {
		name:   "dockerconfigjson auth field wins, padded",
		secret: secret(v1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":{"reg":{"username":"x","auth":"`+b64("u:p:with:colons")+`"}}}`),
		want:   []Entry{{Key: "reg", Credential: Credential{Username: "u", Password: "p:with:colons", Source: "ns/creds"}}},
		ok:     true,
	}, {
		name:   "dockercfg, unpadded auth",
		secret: secret(v1.SecretTypeDockercfg, ".dockercfg", `{"https://index.docker.io/v1/":{"auth":"`+strings.TrimRight(b64("ab:c"), "=")+`","email":"e@x"}}`),
		want:   []Entry{{Key: "https://index.docker.io/v1/", Credential: Credential{Username: "ab", Password: "c", Source: "ns/creds"}}},
		ok:     true,
	}, {
		name:   "empty auths",
		secret: secret(v1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":{}}`),
		want:   []Entry{},
		ok:     true,
	}, {
		name:   "opaque secret ignored",
		secret: secret(v1.SecretTypeOpaque, ".dockerconfigjson", `{"auths":{"reg":{}}}`),
	}, {
		name:   "type without its key ignored",
		secret: secret(v1.SecretTypeDockerConfigJson, ".dockercfg", `{}`),
	}, {
		name:   "empty data ignored",
		secret: secret(v1.SecretTypeDockercfg, ".dockercfg", ``),
	}, {
		name:    "not JSON, content not quoted",
		secret:  secret(v1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths": `+pw),
		wantErr: `image pull secret "ns/creds" (type kubernetes.io/dockerconfigjson): .dockerconfigjson: not valid JSON (at byte`,
	}, {
		name:    "auths of the wrong type",
		secret:  secret(v1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":["`+pw+`"]}`),
		wantErr: "unexpected JSON array",
	}, {
		name:    "entry of the wrong type",
		secret:  secret(v1.SecretTypeDockercfg, ".dockercfg", `{"reg":"`+pw+`"}`),
		wantErr: `registry "reg": unexpected JSON string`,
	}, {
		name:    "auth not base64",
		secret:  secret(v1.SecretTypeDockercfg, ".dockercfg", `{"reg":{"auth":"`+pw+`!!"}}`),
		wantErr: `registry "reg": auth is not base64`,
	}, {
		name:    "auth without colon",
		secret:  secret(v1.SecretTypeDockercfg, ".dockercfg", `{"reg":{"auth":"`+b64(pw)+`"}}`),
		wantErr: "auth must be base64 of username:password",
	}, {
		name:    "hostile key: control characters replaced, long key cut",
		secret:  secret(v1.SecretTypeDockercfg, ".dockercfg", `{"a\nFAKE LOG LINE`+strings.Repeat("x", 500)+`":{"auth":"%%"}}`),
		wantErr: `registry "a?FAKE LOG LINE` + strings.Repeat("x", 85) + `...": auth is not base64`,
	}, {
		name:    "too large",
		secret:  secret(v1.SecretTypeDockercfg, ".dockercfg", `{"reg":{"password":"`+strings.Repeat("p", maxSecretBytes)+`"}}`),
		wantErr: "larger than",
	}, {
		name:    "deeply nested",
		secret:  secret(v1.SecretTypeDockerConfigJson, ".dockerconfigjson", strings.Repeat("[", 100000)),
		wantErr: "not valid JSON",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := FromSecret(tt.secret)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), pw) {
					t.Fatalf("error quotes the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.ok || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v %v, want %v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCredentialNeverPrintsSecrets(t *testing.T) {
	c := Credential{Username: "user-x", Password: "pw-x", Source: "ns/s"}
	e := Entry{Key: "reg", Credential: c}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%v %+v %#v", e, e, e), fmt.Sprint([]Credential{c})} {
		if strings.Contains(s, "user-x") || strings.Contains(s, "pw-x") {
			t.Errorf("printed: %s", s)
		}
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                              "docker.io/library/busybox",
		"busybox:1.35":                         "docker.io/library/busybox",
		"team/app:v1":                          "docker.io/team/app",
		"docker.io/library/busybox@sha256:abc": "docker.io/library/busybox",
		"127.0.0.1:5000/e2e/app:1":             "127.0.0.1:5000/e2e/app",
		"localhost/app":                        "localhost/app",
		"registry.example.com/a/b/c:tag":       "registry.example.com/a/b/c",
		"reg:5000/app@sha256:abc":              "reg:5000/app",
	} {
		if got := Repository(in); got != want {
			t.Errorf("Repository(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLookup(t *testing.T) {
	cred := func(name string) Credential { return Credential{Username: name, Source: "ns/" + name} }
	tests := []struct {
		name    string
		entries [][]Entry // one slice per secret, in pod order
		image   string
		want    []string // usernames, in order
	}{{
		name:    "host and port",
		entries: [][]Entry{{{Key: "127.0.0.1:5000", Credential: cred("a")}}},
		image:   "127.0.0.1:5000/e2e/app:1",
		want:    []string{"a"},
	}, {
		name:    "other port does not match",
		entries: [][]Entry{{{Key: "127.0.0.1:5001", Credential: cred("a")}}},
		image:   "127.0.0.1:5000/e2e/app:1",
	}, {
		name:    "key with port, image without",
		entries: [][]Entry{{{Key: "reg.io:443", Credential: cred("a")}}},
		image:   "reg.io/app",
	}, {
		name:    "scheme and /v2/ dropped",
		entries: [][]Entry{{{Key: "https://reg.io/v2/", Credential: cred("a")}}},
		image:   "reg.io/app",
		want:    []string{"a"},
	}, {
		name:    "path prefix",
		entries: [][]Entry{{{Key: "reg.io/team", Credential: cred("team")}, {Key: "reg.io/other", Credential: cred("other")}}},
		image:   "reg.io/team/app:1",
		want:    []string{"team"},
	}, {
		name:    "more specific key first, then the host's, across secrets",
		entries: [][]Entry{{{Key: "reg.io", Credential: cred("host")}}, {{Key: "reg.io/team", Credential: cred("team")}}},
		image:   "reg.io/team/app",
		want:    []string{"team", "host"},
	}, {
		name:    "same key in two secrets: pod order",
		entries: [][]Entry{{{Key: "reg.io", Credential: cred("first")}}, {{Key: "https://reg.io", Credential: cred("second")}}},
		image:   "reg.io/app",
		want:    []string{"first", "second"},
	}, {
		name:    "wildcard label",
		entries: [][]Entry{{{Key: "*.example.com", Credential: cred("w")}}},
		image:   "registry.example.com/app",
		want:    []string{"w"},
	}, {
		name:    "wildcard needs as many labels",
		entries: [][]Entry{{{Key: "*.example.com", Credential: cred("w")}}},
		image:   "a.registry.example.com/app",
	}, {
		name:    "wildcard does not match the bare domain",
		entries: [][]Entry{{{Key: "*.example.com", Credential: cred("w")}}},
		image:   "example.com/app",
	}, {
		name:    "partial label glob",
		entries: [][]Entry{{{Key: "reg-*.example.com", Credential: cred("w")}}},
		image:   "reg-eu.example.com/app",
		want:    []string{"w"},
	}, {
		name:    "Docker Hub through index.docker.io",
		entries: [][]Entry{{{Key: "https://index.docker.io/v1/", Credential: cred("hub")}}},
		image:   "busybox:1.35",
		want:    []string{"hub"},
	}, {
		name:    "Docker Hub key does not cover other registries",
		entries: [][]Entry{{{Key: "https://index.docker.io/v1/", Credential: cred("hub")}}},
		image:   "reg.io/busybox",
	}, {
		name:    "docker.io key",
		entries: [][]Entry{{{Key: "docker.io", Credential: cred("d")}, {Key: "index.docker.io", Credential: cred("hub")}}},
		image:   "team/app",
		want:    []string{"d"},
	}, {
		name:    "no secrets",
		image:   "reg.io/app",
		entries: nil,
	}, {
		name:    "broken keys ignored",
		entries: [][]Entry{{{Key: "%zz", Credential: cred("bad")}, {Key: "[bad", Credential: cred("bad2")}, {Key: "", Credential: cred("empty")}, {Key: "reg.io", Credential: cred("ok")}}},
		image:   "reg.io/app",
		want:    []string{"ok"},
	}, {
		name:    "bad glob in key never matches",
		entries: [][]Entry{{{Key: "[.example.com", Credential: cred("bad")}}},
		image:   "a.example.com/app",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k Keyring
			for _, e := range tt.entries {
				k.Add(e)
			}
			var got []string
			for _, c := range k.Lookup(tt.image) {
				got = append(got, c.Username)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Lookup(%q) = %v, want %v", tt.image, got, tt.want)
			}
		})
	}
}
