package options

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The only config file type nodelet reads.
const (
	ConfigKind       = "KubeletConfiguration"
	ConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"
)

// LoadConfigFile reads a KubeletConfiguration from a YAML or JSON file.
// Decoding is strict and case-sensitive, as upstream: an unknown or misspelt
// field, or a duplicated one, is an error naming it. Relative paths in the
// file are resolved against the file's directory, as upstream.
func LoadConfigFile(path string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	kc, err := DecodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	resolveRelativePaths(kc, filepath.Dir(path))
	return kc, nil
}

// DecodeConfig decodes a KubeletConfiguration from YAML or JSON bytes, checking
// kind and apiVersion. Values the file leaves out stay zero; Resolve applies
// the defaults.
func DecodeConfig(data []byte) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	js := data
	// JSON goes straight to the decoder: the YAML parser would reject JSON
	// indented with tabs, and the JSON decoder catches duplicates itself.
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		var err error
		if js, err = yaml.YAMLToJSONStrict(data); err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
	}

	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("parsing kind and apiVersion: %w", err)
	}
	switch {
	case tm.Kind == "":
		return nil, fmt.Errorf("missing kind, want kind: %s", ConfigKind)
	case tm.Kind != ConfigKind:
		return nil, fmt.Errorf("kind is %q, want %q", tm.Kind, ConfigKind)
	case tm.APIVersion == "":
		return nil, fmt.Errorf("missing apiVersion, want apiVersion: %s", ConfigAPIVersion)
	case tm.APIVersion != ConfigAPIVersion:
		return nil, fmt.Errorf("apiVersion is %q, want %q", tm.APIVersion, ConfigAPIVersion)
	}

	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, kc)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", ConfigKind, err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("decoding %s: %s", ConfigKind, strings.Join(msgs, "; "))
	}
	return kc, nil
}

// resolveRelativePaths makes the file's relative paths absolute against dir.
func resolveRelativePaths(kc *kubeletconfigv1beta1.KubeletConfiguration, dir string) {
	paths := []*string{
		&kc.StaticPodPath,
		&kc.TLSCertFile,
		&kc.TLSPrivateKeyFile,
		&kc.Authentication.X509.ClientCAFile,
		&kc.PodLogsDir,
		kc.ResolverConfig,
	}
	for _, p := range paths {
		if p != nil && *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}
