package options

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// refusal describes an upstream flag nodelet does not implement and must
// not ignore: left at its default it changes nothing, but any other value
// would make nodelet quietly less secure (or differently secure) than the
// operator asked, so nodelet refuses to start instead. docs/FLAGS.md lists
// these and the ones that are only warned about, with the reasons.
type refusal struct {
	// isDefault reports whether a flag value is upstream's default.
	isDefault func(string) bool
	// reason says what ignoring the flag would weaken.
	reason string
}

func isValue(def string) func(string) bool {
	return func(v string) bool { return strings.TrimSpace(v) == def }
}

func isDuration(def time.Duration) func(string) bool {
	return func(v string) bool {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		return err == nil && d == def
	}
}

// refusedFlags are the unsupported flags (see unsupported.go) that stop
// nodelet when set to anything but upstream's default.
var refusedFlags = map[string]refusal{
	"protect-kernel-defaults": {isValue("false"),
		"nodelet does not check the kernel's tunables against the expected defaults"},
	"runonce": {isValue("false"),
		"nodelet has no run-once mode"},
	"config-dir": {isValue(""),
		"nodelet does not read drop-in configuration; settings there (authentication, TLS, ...) would be ignored"},
}

// refusedFlagErrors names every unsupported flag set to a value nodelet
// would have to ignore at a cost to security. A flag nodelet has since come
// to implement (registered with its own usage) is not refused.
func refusedFlagErrors(fs *pflag.FlagSet) []error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		r, ok := refusedFlags[f.Name]
		if !ok || f.Usage != unsupportedUsage || r.isDefault(f.Value.String()) {
			return
		}
		errs = append(errs, fmt.Errorf("flag --%s=%s is not supported by nodelet and cannot be ignored: %s", f.Name, f.Value.String(), r.reason))
	})
	return errs
}

// isRefusedFlag reports whether a set flag is refused (and so not merely
// warned about).
func isRefusedFlag(f *pflag.Flag) bool {
	r, ok := refusedFlags[f.Name]
	return ok && f.Usage == unsupportedUsage && !r.isDefault(f.Value.String())
}

// refusedFields are the KubeletConfiguration fields (JSON paths as
// unsupportedFieldWarnings names them) that stop nodelet when a file sets
// them to anything but upstream's default.
var refusedFields = map[string]string{
	"protectKernelDefaults":                  refusedFlags["protect-kernel-defaults"].reason,
	"imagePullCredentialsVerificationPolicy": "nodelet does not verify that a pod may use an image another pod pulled with credentials",
	"preloadedImagesVerificationAllowlist":   "nodelet does not verify that a pod may use an image another pod pulled with credentials",
}

// ignoredFieldReasons say, for ignored fields an operator may well expect
// to work, what is missing, so the warning is not mistaken for a typo.
var ignoredFieldReasons = map[string]string{
	"shutdownGracePeriodByPodPriority": "nodelet stops pods on node shutdown in two groups only (shutdownGracePeriod, shutdownGracePeriodCriticalPods)",
}

// splitFieldFindings sorts the unsupported fields a file sets into refusals
// (errors) and warnings.
func splitFieldFindings(paths []string) (warnings []string, errs []error) {
	for _, p := range paths {
		if reason := refusedFields[p]; reason != "" {
			errs = append(errs, fmt.Errorf("config field %q is not supported by nodelet and cannot be ignored: %s", p, reason))
			continue
		}
		w := fmt.Sprintf("config field %q is not supported by nodelet and is ignored", p)
		if reason := ignoredFieldReasons[p]; reason != "" {
			w += ": " + reason
		}
		warnings = append(warnings, w)
	}
	return warnings, errs
}
