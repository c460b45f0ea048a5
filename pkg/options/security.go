package options

import (
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// tlsVersions are the names --tls-min-version / tlsMinVersion accept, as
// upstream.
var tlsVersions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10,
	"VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12,
	"VersionTLS13": tls.VersionTLS13,
}

// TLSVersion is --tls-min-version as a crypto/tls constant, or 0 when unset
// (the server's own floor, TLS 1.2, applies). Validate rejects unknown names.
func (o *Options) TLSVersion() uint16 { return tlsVersions[o.TLSMinVersion] }

// CipherSuiteIDs is --tls-cipher-suites as crypto/tls IDs, or nil when unset
// (Go's defaults). Validate rejects unknown names.
func (o *Options) CipherSuiteIDs() []uint16 {
	ids, _ := cipherSuites(o.TLSCipherSuites)
	return ids
}

// cipherSuites maps IANA suite names (the ones crypto/tls knows, secure or
// not, as upstream) to IDs and names the insecure ones.
func cipherSuites(names []string) (ids []uint16, insecure []string) {
	byName := map[string]uint16{}
	weak := map[string]bool{}
	for _, s := range tls.CipherSuites() {
		byName[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		byName[s.Name] = s.ID
		weak[s.Name] = true
	}
	for _, n := range names {
		if id, ok := byName[n]; ok {
			ids = append(ids, id)
		}
		if weak[n] {
			insecure = append(insecure, n)
		}
	}
	return ids, insecure
}

// validateCacheTTLs checks the webhook cache flags; 0 disables a cache.
func (o *Options) validateCacheTTLs() []error {
	var errs []error
	for flag, d := range map[string]time.Duration{
		"authentication-token-webhook-cache-ttl":       o.WebhookTokenCacheTTL,
		"authorization-webhook-cache-authorized-ttl":   o.AuthzCacheAuthorizedTTL,
		"authorization-webhook-cache-unauthorized-ttl": o.AuthzCacheUnauthorizedTTL,
		"streaming-connection-idle-timeout":            o.StreamingConnectionIdleTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("--%s (%s) must not be negative", flag, d))
		}
	}
	return errs
}

// validateTLS checks --tls-min-version and --tls-cipher-suites.
func (o *Options) validateTLS() []error {
	var errs []error
	if o.TLSMinVersion != "" {
		if _, ok := tlsVersions[o.TLSMinVersion]; !ok {
			errs = append(errs, fmt.Errorf("--tls-min-version (%q) must be one of %s", o.TLSMinVersion,
				strings.Join(slices.Sorted(maps.Keys(tlsVersions)), ", ")))
		}
	}
	for _, n := range o.TLSCipherSuites {
		if ids, _ := cipherSuites([]string{n}); len(ids) == 0 {
			errs = append(errs, fmt.Errorf("--tls-cipher-suites entry %q is not a cipher suite Go's crypto/tls knows", n))
		}
	}
	// As upstream: TLS 1.3 suites are not configurable, so a list with a
	// 1.3 floor would silently mean nothing.
	if o.TLSMinVersion == "VersionTLS13" && len(o.TLSCipherSuites) > 0 {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites cannot be used with --tls-min-version=VersionTLS13: TLS 1.3 cipher suites are not configurable"))
	}
	return errs
}

// NodeTaints are the taints the Node is registered with:
// --register-with-taints, plus the unschedulable taint when
// --register-schedulable=false asks for it (as upstream).
func (o *Options) NodeTaints() []v1.Taint {
	taints := slices.Clone(o.RegisterWithTaints)
	if !o.RegisterSchedulable && !slices.ContainsFunc(taints, func(t v1.Taint) bool {
		return t.Key == v1.TaintNodeUnschedulable && t.Effect == v1.TaintEffectNoSchedule
	}) {
		taints = append(taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	return taints
}

// TLSWarnings names what the TLS settings allow that is known to be weak;
// upstream accepts these too.
func (o *Options) TLSWarnings() []string {
	var out []string
	if v := o.TLSVersion(); v != 0 && v < tls.VersionTLS12 {
		out = append(out, fmt.Sprintf("--tls-min-version=%s allows TLS versions with known weaknesses", o.TLSMinVersion))
	}
	if _, weak := cipherSuites(o.TLSCipherSuites); len(weak) > 0 {
		out = append(out, fmt.Sprintf("--tls-cipher-suites includes insecure suites: %s", strings.Join(weak, ", ")))
	}
	return out
}

// taintsValue is the pflag.Value behind --register-with-taints:
// comma-separated "key=value:Effect" or "key:Effect", as upstream.
type taintsValue struct {
	taints []v1.Taint
}

func (t *taintsValue) Set(s string) error {
	taints, err := parseTaints(s)
	if err != nil {
		return err
	}
	t.taints = append(t.taints, taints...)
	return nil
}

func (t *taintsValue) String() string {
	parts := make([]string, 0, len(t.taints))
	for _, tt := range t.taints {
		parts = append(parts, tt.ToString())
	}
	return strings.Join(parts, ",")
}

func (t *taintsValue) Type() string { return "key=value:Effect" }

func parseTaints(s string) ([]v1.Taint, error) {
	var out []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("malformed taint %q, want key=value:Effect or key:Effect", spec)
		}
		key, value, _ := strings.Cut(kv, "=")
		out = append(out, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
	}
	return out, nil
}

// validateTaints checks --register-with-taints / registerWithTaints as the
// API server would, so a bad taint stops nodelet instead of failing the
// Node's registration later.
func validateTaints(taints []v1.Taint) []error {
	var errs []error
	seen := map[string]bool{}
	for _, t := range taints {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--register-with-taints key %q is invalid: %s", t.Key, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--register-with-taints value %q of %q is invalid: %s", t.Value, t.Key, strings.Join(msgs, "; ")))
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("--register-with-taints effect %q of %q must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect, t.Key))
		}
		if id := t.Key + ":" + string(t.Effect); seen[id] {
			errs = append(errs, fmt.Errorf("--register-with-taints has %q with effect %s twice", t.Key, t.Effect))
		} else {
			seen[id] = true
		}
	}
	return errs
}

// taintsFlag registers --register-with-taints.
func taintsFlag(name, usage string) flagSpec {
	return flagSpec{
		name: name,
		register: func(fs *pflag.FlagSet, _ *Options) {
			fs.Var(&taintsValue{}, name, usage)
		},
		apply: func(fs *pflag.FlagSet, o *Options) error {
			v, ok := fs.Lookup(name).Value.(*taintsValue)
			if !ok {
				return fmt.Errorf("--%s is registered with an unexpected type", name)
			}
			o.RegisterWithTaints = v.taints
			return nil
		},
	}
}

// securityFlagSpecs are the TLS and registration flags of issue 12.
func securityFlagSpecs() []flagSpec {
	return []flagSpec{
		stringFlag("tls-min-version", "Minimum TLS version of the node API: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13. Default: TLS 1.2.",
			func(o *Options) *string { return &o.TLSMinVersion }),
		stringSliceFlag("tls-cipher-suites", "Comma-separated cipher suites of the node API (IANA names, as Go's crypto/tls). Default: Go's.",
			func(o *Options) *[]string { return &o.TLSCipherSuites }),
		taintsFlag("register-with-taints", "Taints to register the node with, as comma-separated key=value:Effect (or key:Effect). Ignored unless --register-node."),
		boolFlag("enable-debugging-handlers", "Serve exec, attach, port-forward, run and container logs on the node API.",
			func(o *Options) *bool { return &o.EnableDebuggingHandlers }),
		boolFlag("register-schedulable", "Deprecated: false registers the node with the node.kubernetes.io/unschedulable:NoSchedule taint; use --register-with-taints.",
			func(o *Options) *bool { return &o.RegisterSchedulable }),
		durationFlag("streaming-connection-idle-timeout", "Close exec, attach and port-forward sessions idle this long; 0 never does.",
			func(o *Options) *time.Duration { return &o.StreamingConnectionIdleTimeout }),
		durationFlag("authentication-token-webhook-cache-ttl", "How long TokenReview answers are cached.",
			func(o *Options) *time.Duration { return &o.WebhookTokenCacheTTL }),
		durationFlag("authorization-webhook-cache-authorized-ttl", "How long allowed SubjectAccessReview answers are cached.",
			func(o *Options) *time.Duration { return &o.AuthzCacheAuthorizedTTL }),
		durationFlag("authorization-webhook-cache-unauthorized-ttl", "How long denied SubjectAccessReview answers are cached.",
			func(o *Options) *time.Duration { return &o.AuthzCacheUnauthorizedTTL }),
	}
}
