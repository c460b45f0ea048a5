package options

import (
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// osHostname is replaced in tests.
var osHostname = os.Hostname

// Load is what main calls after parsing fs: it reads the --config file, if
// one is named, and returns Resolve's result.
func Load(fs *pflag.FlagSet) (*Options, []string, error) {
	var kc *kubeletconfigv1beta1.KubeletConfiguration
	if f := fs.Lookup(FlagConfig); f != nil && f.Value.String() != "" {
		var err error
		if kc, err = LoadConfigFile(f.Value.String()); err != nil {
			return nil, nil, err
		}
	}
	return Resolve(fs, kc)
}

// Resolve merges defaults, the config file (nil when there is none) and the
// flags explicitly set on the parsed fs, in that order of precedence, fills in
// derived values (hostname, image service endpoint) and validates the result.
// The warnings name ignored flags and config fields; they are returned even
// when the error is not nil, so the caller can log them either way.
func Resolve(fs *pflag.FlagSet, kc *kubeletconfigv1beta1.KubeletConfiguration) (*Options, []string, error) {
	o := Defaults()
	var warnings []string
	var refused []error
	if kc != nil {
		o = configFileDefaults()
		applyConfigFile(o, kc)
		w, errs := unsupportedFieldWarnings(kc)
		warnings, refused = append(warnings, w...), append(refused, errs...)
	}
	warnings = append(warnings, unsupportedFlagWarnings(fs)...)
	refused = append(refused, refusedFlagErrors(fs)...)
	if len(refused) > 0 {
		return nil, warnings, errors.Join(refused...)
	}

	for _, f := range slices.Concat(flagSpecs(), securityFlagSpecs(), allocatableFlagSpecs()) {
		if !fs.Changed(f.name) {
			continue
		}
		if err := f.apply(fs, o); err != nil {
			return nil, warnings, err
		}
	}
	if fs.Changed(FlagVerbosity) {
		v, err := strconv.Atoi(fs.Lookup(FlagVerbosity).Value.String())
		if err != nil {
			return nil, warnings, fmt.Errorf("reading --%s: %w", FlagVerbosity, err)
		}
		o.Verbosity = v
	}

	if o.CertDir == "" {
		o.CertDir = filepath.Join(o.RootDir, "pki")
	}
	if o.ImageServiceEndpoint == "" {
		o.ImageServiceEndpoint = o.ContainerRuntimeEndpoint
	}
	host, err := hostname(o.HostnameOverride)
	if err != nil {
		return nil, warnings, err
	}
	o.Hostname = host

	if err := o.Validate(); err != nil {
		return nil, warnings, err
	}
	return o, warnings, nil
}

// hostname is the node's name: the override if given, else the host name,
// trimmed and lowercased as upstream does (node names must be lowercase).
func hostname(override string) (string, error) {
	name := override
	if name == "" {
		h, err := osHostname()
		if err != nil {
			return "", fmt.Errorf("determining hostname (set --hostname-override): %w", err)
		}
		name = h
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", fmt.Errorf("hostname is empty; set --hostname-override")
	}
	return name, nil
}

// ApplyVerbosity sets klog's verbosity to o.Verbosity. Needed only when the
// level came from the config file: --v already set klog while parsing.
func (o *Options) ApplyVerbosity() error { return SetVerbosity(o.Verbosity) }

// SetVerbosity sets klog's verbosity while nodelet runs (also PUT
// /debug/flags/v).
func SetVerbosity(level int) error {
	if level < 0 {
		return fmt.Errorf("log verbosity %d: must be 0 or more", level)
	}
	var gfs goflag.FlagSet
	klog.InitFlags(&gfs)
	if err := gfs.Set("v", strconv.Itoa(level)); err != nil {
		return fmt.Errorf("setting log verbosity %d: %w", level, err)
	}
	return nil
}
