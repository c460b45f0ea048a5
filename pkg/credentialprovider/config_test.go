package credentialprovider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
)

func validProvider() kubeletconfigv1.CredentialProvider {
	return kubeletconfigv1.CredentialProvider{
		Name: "ecr", MatchImages: []string{"*.dkr.ecr.*.amazonaws.com"},
		DefaultCacheDuration: &metav1.Duration{Duration: time.Hour},
		APIVersion:           "credentialprovider.kubelet.k8s.io/v1",
	}
}

func TestValidateConfig(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(c *kubeletconfigv1.CredentialProviderConfig)
		want   string // substring of the error; "" for valid
	}{
		{"valid", func(*kubeletconfigv1.CredentialProviderConfig) {}, ""},
		{"no providers", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers = nil }, "providers: Required"},
		{"empty name", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].Name = "" }, "providers[0].name: Required"},
		{"slash", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].Name = "../bin/sh" }, "path separator"},
		{"dot dot", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].Name = ".." }, "cannot be '.' or '..'"},
		{"space", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].Name = "a b" }, "spaces"},
		{"duplicate", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers = append(c.Providers, c.Providers[0]) }, "providers[1].name: Duplicate"},
		{"no apiVersion", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].APIVersion = "" }, "apiVersion: Required"},
		{"bad apiVersion", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].APIVersion = "v1" }, "apiVersion: Unsupported"},
		{"v1beta1", func(c *kubeletconfigv1.CredentialProviderConfig) {
			c.Providers[0].APIVersion = "credentialprovider.kubelet.k8s.io/v1beta1"
		}, ""},
		{"no matchImages", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].MatchImages = nil }, "matchImages: Required"},
		{"bad glob", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].MatchImages = []string{"[.io"} }, "matchImages[0]"},
		{"no host", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].MatchImages = []string{"/path"} }, "no registry host"},
		{"no defaultCacheDuration", func(c *kubeletconfigv1.CredentialProviderConfig) { c.Providers[0].DefaultCacheDuration = nil }, "defaultCacheDuration: Required"},
		{"negative duration", func(c *kubeletconfigv1.CredentialProviderConfig) {
			c.Providers[0].DefaultCacheDuration = &metav1.Duration{Duration: -time.Second}
		}, "greater than or equal to 0"},
		{"zero duration", func(c *kubeletconfigv1.CredentialProviderConfig) {
			c.Providers[0].DefaultCacheDuration = &metav1.Duration{}
		}, ""},
		{"bad env", func(c *kubeletconfigv1.CredentialProviderConfig) {
			c.Providers[0].Env = []kubeletconfigv1.ExecEnvVar{{Name: "A=B"}}
		}, "env[0].name"},
		{"tokenAttributes", func(c *kubeletconfigv1.CredentialProviderConfig) {
			c.Providers[0].TokenAttributes = &kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "x"}
		}, "tokenAttributes: Forbidden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{validProvider()}}
			tt.change(c)
			err := ValidateConfig(c).ToAggregate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

const configYAML = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: %s
  matchImages: ["registry.example.com"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--flag"]
  env:
  - name: A
    value: b
`

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("b.yaml", strings.Replace(configYAML, "%s", "two", 1))
	write("a.json", `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"CredentialProviderConfig","providers":[{"name":"one","matchImages":["x.io"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}`)
	write("ignored.txt", "not a config")

	cfg, err := ReadConfig(one)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if p.Name != "two" || p.DefaultCacheDuration.Duration != 10*time.Minute || p.Args[0] != "--flag" || p.Env[0].Value != "b" {
		t.Fatalf("decoded %+v", p)
	}
	cfg, err = ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Providers) != 2 || cfg.Providers[0].Name != "one" || cfg.Providers[1].Name != "two" {
		t.Fatalf("merged providers %+v", cfg.Providers)
	}

	for name, content := range map[string]string{
		"unknown field": strings.Replace(configYAML, "args:", "argz:", 1),
		"wrong kind":    strings.Replace(configYAML, "kind: CredentialProviderConfig", "kind: KubeletConfiguration", 1),
		"wrong group":   strings.Replace(configYAML, "kubelet.config.k8s.io/v1", "v1", 1),
	} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadConfig(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	write("c.yaml", strings.Replace(configYAML, "%s", "two", 1))
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), `"two" is also in`) {
		t.Errorf("duplicate across files: %v", err)
	}
	if _, err := ReadConfig(t.TempDir()); err == nil {
		t.Error("empty directory: no error")
	}
}

func TestLoad(t *testing.T) {
	bin := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(configYAML, "%s", "plug", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfg, ""); err == nil {
		t.Error("no bin dir: no error")
	}
	if _, err := Load(cfg, filepath.Join(bin, "missing")); err == nil {
		t.Error("missing bin dir: no error")
	}
	if _, err := Load(cfg, bin); err == nil || !strings.Contains(err.Error(), "plug") {
		t.Errorf("missing plugin: %v", err)
	}
	if err := os.WriteFile(filepath.Join(bin, "plug"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	k, err := Load(cfg, bin)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Names(); len(got) != 1 || got[0] != "plug" {
		t.Errorf("names %v", got)
	}
}
