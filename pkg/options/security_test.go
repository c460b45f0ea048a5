package options

import (
	"crypto/tls"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestTLSFlags(t *testing.T) {
	stubHostname(t, "host")
	o, warnings, err := resolveArgs(t, "", "--tls-min-version=VersionTLS13")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("--tls-min-version=VersionTLS13: %v %q", err, warnings)
	}
	if o.TLSVersion() != tls.VersionTLS13 || o.CipherSuiteIDs() != nil {
		t.Errorf("version %x suites %v", o.TLSVersion(), o.CipherSuiteIDs())
	}

	o, _, err = resolveArgs(t, "", "--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_RC4_128_SHA")
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_RC4_128_SHA}; !slices.Equal(o.CipherSuiteIDs(), want) {
		t.Errorf("suites %v, want %v", o.CipherSuiteIDs(), want)
	}
	if w := o.TLSWarnings(); len(w) != 1 || !strings.Contains(w[0], "TLS_RSA_WITH_RC4_128_SHA") {
		t.Errorf("warnings %q, want the insecure suite named", w)
	}

	if o, _, _ := resolveArgs(t, ""); o.TLSVersion() != 0 {
		t.Errorf("unset --tls-min-version = %x, want 0 (the server's TLS 1.2 floor)", o.TLSVersion())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-min-version=TLS1.3"}, `--tls-min-version ("TLS1.3") must be one of`},
		{[]string{"--tls-cipher-suites=NOPE"}, `--tls-cipher-suites entry "NOPE"`},
		{[]string{"--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_AES_128_GCM_SHA256"}, "cannot be used with --tls-min-version=VersionTLS13"},
	} {
		if _, _, err := resolveArgs(t, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestRegisterWithTaints(t *testing.T) {
	stubHostname(t, "host")
	o, _, err := resolveArgs(t, "", "--register-with-taints", "dedicated=infra:NoSchedule,gpu:NoExecute", "--register-with-taints=soft=x:PreferNoSchedule")
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.Taint{
		{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule},
		{Key: "gpu", Effect: v1.TaintEffectNoExecute},
		{Key: "soft", Value: "x", Effect: v1.TaintEffectPreferNoSchedule},
	}
	if !reflect.DeepEqual(o.RegisterWithTaints, want) {
		t.Errorf("taints %v, want %v", o.RegisterWithTaints, want)
	}
	for arg, msg := range map[string]string{
		"dedicated=infra":             "malformed taint",
		"a:Sometimes":                 `effect "Sometimes"`,
		"bad key!:NoSchedule":         `key "bad key!"`,
		"k=bad value:NoExecute":       `value "bad value"`,
		"k:NoSchedule,k=v:NoSchedule": "twice",
	} {
		fs := NewFlagSet("nodelet")
		err := fs.Parse([]string{"--register-with-taints", arg})
		if err == nil {
			_, _, err = Load(fs)
		}
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("--register-with-taints %q: err %v, want %q", arg, err, msg)
		}
	}
}

// nonDefault gives each refused flag a value other than upstream's default.
var nonDefault = map[string]string{
	"protect-kernel-defaults": "true",
	"runonce":                 "true",
	"config-dir":              "/etc/kubernetes/kubelet.conf.d",
}

// upstreamDefault gives each refused flag its upstream default, spelled as
// unit files do.
var upstreamDefault = map[string]string{
	"protect-kernel-defaults": "false",
	"runonce":                 "false",
	"config-dir":              "",
}

func TestRefusedFlags(t *testing.T) {
	stubHostname(t, "host")
	if len(nonDefault) != len(refusedFlags) || len(upstreamDefault) != len(refusedFlags) {
		t.Fatalf("the test tables do not cover every refused flag")
	}
	for name := range refusedFlags {
		if !slices.Contains(unsupportedBoolFlags, name) && !slices.Contains(unsupportedValueFlags, name) {
			// Once implemented, a flag is no longer refused (see
			// refusedFlagErrors); the entry can go.
			continue
		}
		t.Run(name, func(t *testing.T) {
			_, warnings, err := resolveArgs(t, "", "--"+name+"="+nonDefault[name])
			if err == nil || !strings.Contains(err.Error(), "--"+name+"=") || !strings.Contains(err.Error(), "cannot be ignored") {
				t.Errorf("non-default value: err %v, want a refusal naming --%s", err, name)
			}
			for _, w := range warnings {
				if strings.Contains(w, "--"+name+" ") {
					t.Errorf("refused flag also warned about: %q", w)
				}
			}
			_, warnings, err = resolveArgs(t, "", "--"+name+"="+upstreamDefault[name])
			if err != nil {
				t.Errorf("upstream default: %v", err)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "--"+name+" is not supported") {
				t.Errorf("upstream default: warnings %q, want one naming --%s", warnings, name)
			}
		})
	}
}

func TestRefusedFields(t *testing.T) {
	tests := map[string]string{
		"protectKernelDefaults":                  "protectKernelDefaults: true",
		"imagePullCredentialsVerificationPolicy": "imagePullCredentialsVerificationPolicy: AlwaysVerify",
		"preloadedImagesVerificationAllowlist":   "preloadedImagesVerificationAllowlist: [registry.k8s.io/pause]",
	}
	if len(tests) != len(refusedFields) {
		t.Fatalf("the test table does not cover every refused field")
	}
	for path, body := range tests {
		t.Run(path, func(t *testing.T) {
			kc, err := DecodeConfig([]byte(header + body))
			if err != nil {
				t.Fatal(err)
			}
			_, refused := unsupportedFieldWarnings(kc)
			if len(refused) != 1 || !strings.Contains(refused[0].Error(), `"`+path+`"`) {
				t.Errorf("refused %v, want one naming %q", refused, path)
			}
		})
	}
	// The upstream defaults written out are fine.
	kc, err := DecodeConfig([]byte(header + "podPidsLimit: -1\nprotectKernelDefaults: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w, refused := unsupportedFieldWarnings(kc); len(w)+len(refused) != 0 {
		t.Errorf("upstream defaults: warnings %q refused %v", w, refused)
	}
	// Through Resolve, a refusal stops start-up.
	stubHostname(t, "host")
	if _, _, err := resolveArgs(t, header+"protectKernelDefaults: true\n"); err == nil || !strings.Contains(err.Error(), "protectKernelDefaults") {
		t.Errorf("Resolve with a refused field: %v", err)
	}
}

func TestWebhookCacheTTLs(t *testing.T) {
	stubHostname(t, "host")
	o, warnings, err := resolveArgs(t, "", "--authentication-token-webhook-cache-ttl=10s",
		"--authorization-webhook-cache-authorized-ttl=1m", "--authorization-webhook-cache-unauthorized-ttl=0s")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("%v %q", err, warnings)
	}
	if o.WebhookTokenCacheTTL != 10*time.Second || o.AuthzCacheAuthorizedTTL != time.Minute || o.AuthzCacheUnauthorizedTTL != 0 {
		t.Errorf("TTLs %s %s %s", o.WebhookTokenCacheTTL, o.AuthzCacheAuthorizedTTL, o.AuthzCacheUnauthorizedTTL)
	}
	d, _, _ := resolveArgs(t, "")
	if d.WebhookTokenCacheTTL != 2*time.Minute || d.AuthzCacheAuthorizedTTL != 5*time.Minute || d.AuthzCacheUnauthorizedTTL != 30*time.Second {
		t.Errorf("defaults %s %s %s, want upstream's 2m 5m 30s", d.WebhookTokenCacheTTL, d.AuthzCacheAuthorizedTTL, d.AuthzCacheUnauthorizedTTL)
	}
	if _, _, err := resolveArgs(t, "", "--authentication-token-webhook-cache-ttl=-1s"); err == nil {
		t.Error("negative TTL accepted")
	}
}

func TestDebuggingHandlersAndSchedulable(t *testing.T) {
	stubHostname(t, "host")
	d, _, err := resolveArgs(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.EnableDebuggingHandlers || !d.RegisterSchedulable || len(d.NodeTaints()) != 0 {
		t.Errorf("defaults: debugging %v schedulable %v taints %v", d.EnableDebuggingHandlers, d.RegisterSchedulable, d.NodeTaints())
	}
	o, warnings, err := resolveArgs(t, "", "--enable-debugging-handlers=false", "--register-schedulable=false", "--register-with-taints=a=b:NoExecute")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("%v %q", err, warnings)
	}
	want := []v1.Taint{{Key: "a", Value: "b", Effect: v1.TaintEffectNoExecute}, {Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}}
	if o.EnableDebuggingHandlers || !reflect.DeepEqual(o.NodeTaints(), want) {
		t.Errorf("debugging %v taints %v, want false %v", o.EnableDebuggingHandlers, o.NodeTaints(), want)
	}
	// Asked for both ways: the taint once.
	o, _, _ = resolveArgs(t, "", "--register-schedulable=false", "--register-with-taints="+v1.TaintNodeUnschedulable+":NoSchedule")
	if len(o.NodeTaints()) != 1 {
		t.Errorf("taints %v, want the unschedulable taint once", o.NodeTaints())
	}
	kc, _, err := resolveArgs(t, header+"enableDebuggingHandlers: false\n")
	if err != nil || kc.EnableDebuggingHandlers {
		t.Errorf("config enableDebuggingHandlers: false: %v %v", err, kc.EnableDebuggingHandlers)
	}
}
