package credentialprovider

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodelet/nodelet/pkg/pullsecrets"
)

// configGroup is the API group of CredentialProviderConfig. Its v1alpha1,
// v1beta1 and v1 have the same fields nodelet reads.
const configGroup = "kubelet.config.k8s.io"

var configVersions = []string{configGroup + "/v1", configGroup + "/v1beta1", configGroup + "/v1alpha1"}

// requestVersions are the apiVersions a provider may ask for; the request
// and response have the same fields in all of them.
var requestVersions = []string{
	"credentialprovider.kubelet.k8s.io/v1",
	"credentialprovider.kubelet.k8s.io/v1beta1",
	"credentialprovider.kubelet.k8s.io/v1alpha1",
}

// ReadConfig reads the config at path: one file, or every *.json, *.yaml
// and *.yml file of a directory in name order, their providers merged.
func ReadConfig(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	if path == "" {
		return nil, errors.New("credential provider config path is empty")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("credential provider config: %w", err)
		}
		files = nil
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".json", ".yaml", ".yml":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("credential provider config: no *.json, *.yaml or *.yml file in directory %s", path)
		}
	}
	merged := &kubeletconfigv1.CredentialProviderConfig{}
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("credential provider config: %w", err)
		}
		cfg, err := decodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("credential provider config %s: %w", f, err)
		}
		for _, p := range cfg.Providers {
			if other, dup := seen[p.Name]; dup {
				return nil, fmt.Errorf("credential provider config %s: provider name %q is also in %s", f, p.Name, other)
			}
			seen[p.Name] = f
			merged.Providers = append(merged.Providers, p)
		}
	}
	return merged, nil
}

// decodeConfig decodes one config file strictly: an unknown field is an
// error, as upstream's strict decoder makes it, so a typo is not ignored.
func decodeConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	cfg := &kubeletconfigv1.CredentialProviderConfig{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, err
	}
	if cfg.Kind != "CredentialProviderConfig" {
		return nil, fmt.Errorf("kind is %q, want CredentialProviderConfig", cfg.Kind)
	}
	if !slices.Contains(configVersions, cfg.APIVersion) {
		return nil, fmt.Errorf("apiVersion %q is not one of %s", cfg.APIVersion, strings.Join(configVersions, ", "))
	}
	return cfg, nil
}

// ValidateConfig checks a config with upstream's rules. nodelet refuses
// tokenAttributes, which it does not implement.
func ValidateConfig(cfg *kubeletconfigv1.CredentialProviderConfig) field.ErrorList {
	var errs field.ErrorList
	fp := field.NewPath("providers")
	if len(cfg.Providers) == 0 {
		errs = append(errs, field.Required(fp, "at least 1 item in providers is required"))
	}
	seen := map[string]bool{}
	for i, p := range cfg.Providers {
		pp := fp.Index(i)
		switch {
		case p.Name == "":
			errs = append(errs, field.Required(pp.Child("name"), ""))
		case p.Name == "." || p.Name == "..":
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name, "provider name cannot be '.' or '..'"))
		case strings.ContainsAny(p.Name, `/\`):
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name, "provider name cannot contain a path separator: it names a file of the bin dir"))
		case strings.Contains(p.Name, " "):
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name, "provider name cannot contain spaces"))
		}
		if seen[p.Name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
		}
		seen[p.Name] = true
		if p.APIVersion == "" {
			errs = append(errs, field.Required(pp.Child("apiVersion"), ""))
		} else if !slices.Contains(requestVersions, p.APIVersion) {
			errs = append(errs, field.NotSupported(pp.Child("apiVersion"), p.APIVersion, requestVersions))
		}
		if len(p.MatchImages) == 0 {
			errs = append(errs, field.Required(pp.Child("matchImages"), "at least 1 item in matchImages is required"))
		}
		for j, m := range p.MatchImages {
			if err := validPattern(m); err != nil {
				errs = append(errs, field.Invalid(pp.Child("matchImages").Index(j), m, "match image is invalid: "+err.Error()))
			}
		}
		if p.DefaultCacheDuration == nil {
			errs = append(errs, field.Required(pp.Child("defaultCacheDuration"), ""))
		} else if p.DefaultCacheDuration.Duration < 0 {
			errs = append(errs, field.Invalid(pp.Child("defaultCacheDuration"), p.DefaultCacheDuration.Duration.String(), "must be greater than or equal to 0"))
		}
		for j, e := range p.Env {
			if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") {
				errs = append(errs, field.Invalid(pp.Child("env").Index(j).Child("name"), e.Name, "must be a non-empty name without '=' or NUL"))
			}
		}
		if p.TokenAttributes != nil {
			errs = append(errs, field.Forbidden(pp.Child("tokenAttributes"), "nodelet does not support service account tokens for credential provider plugins"))
		}
	}
	return errs
}

// validPattern checks a matchImages entry as upstream parses it: a
// schemeless URL whose host globs are valid.
func validPattern(pattern string) error {
	u, err := url.Parse("https://" + pattern)
	if err != nil {
		return err
	}
	if u.Host == "" {
		return errors.New("no registry host")
	}
	labels, _ := pullsecrets.SplitHost(u.Host)
	for _, l := range labels {
		if _, err := filepath.Match(l, ""); err != nil {
			return fmt.Errorf("host label %q: %w", l, err)
		}
	}
	return nil
}
