package options

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"
)

// Upstream kubelet flags that nodelet accepts and ignores, so that a unit file
// written for the upstream kubelet still starts nodelet. Each one that is set
// produces a warning. A flag in neither this list nor flagSpecs is rejected by
// pflag as unknown.
//
// Boolean flags are registered as booleans so that both "--fail-swap-on" and
// "--fail-swap-on=false" parse; every other flag takes one value.
var (
	unsupportedBoolFlags = []string{
		"contention-profiling",
		"cpu-cfs-quota",
		"enable-controller-attach-detach",
		"exit-on-lock-contention",
		"fail-cgroupv1",
		"fail-swap-on",
		"kernel-memcg-notification",
		"keep-terminated-pod-volumes",
		"local-storage-capacity-isolation",
		"make-iptables-util-chains",
		"protect-kernel-defaults",
		"runonce",
		"serialize-image-pulls",
	}
	unsupportedValueFlags = []string{
		"cloud-config",
		// Removed upstream (dockershim, 1.24-1.27) but still in old unit files.
		"cni-bin-dir",
		"cni-conf-dir",
		"config-dir",
		"container-runtime",
		"cpu-cfs-quota-period",
		"cpu-manager-policy",
		"cpu-manager-policy-options",
		"cpu-manager-reconcile-period",
		"event-burst",
		"event-qps",
		"eviction-max-pod-grace-period",
		"eviction-minimum-reclaim",
		"eviction-pressure-transition-period",
		"eviction-soft",
		"eviction-soft-grace-period",
		"feature-gates",
		"hairpin-mode",
		"housekeeping-interval",
		"kube-api-burst",
		"kube-api-content-type",
		"kube-api-qps",
		"kubelet-cgroups",
		"lock-file",
		"log-flush-frequency",
		"logging-format",
		"max-open-files",
		"maximum-dead-containers",
		"maximum-dead-containers-per-container",
		"memory-manager-policy",
		"minimum-container-ttl-duration",
		"network-plugin",
		"node-status-max-images",
		"oom-score-adj",
		"pod-cidr",
		"pods-per-core",
		"qos-reserved",
		"registry-burst",
		"registry-qps",
		"reserved-cpus",
		"reserved-memory",
		"runtime-cgroups",
		"runtime-request-timeout",
		"system-cgroups",
		"topology-manager-policy",
		"topology-manager-policy-options",
		"topology-manager-scope",
		"volume-plugin-dir",
		"volume-stats-agg-period",
	}
)

const unsupportedUsage = "Not supported by nodelet: accepted for compatibility with the upstream kubelet and ignored."

// addUnsupportedFlags registers the ignored upstream flags, hidden so --help
// lists only what has an effect.
func addUnsupportedFlags(fs *pflag.FlagSet) {
	for _, name := range unsupportedBoolFlags {
		fs.Bool(name, false, unsupportedUsage)
		_ = fs.MarkHidden(name) // cannot fail: the flag was just defined
	}
	for _, name := range unsupportedValueFlags {
		fs.String(name, "", unsupportedUsage)
		_ = fs.MarkHidden(name)
	}
}

// unsupportedFlagWarnings names every ignored flag the user set, in flag name
// order; refused ones are refusedFlagErrors' to report.
func unsupportedFlagWarnings(fs *pflag.FlagSet) []string {
	var warnings []string
	fs.Visit(func(f *pflag.Flag) {
		if isRefusedFlag(f) {
			return
		}
		if slices.Contains(unsupportedBoolFlags, f.Name) || slices.Contains(unsupportedValueFlags, f.Name) {
			warnings = append(warnings, fmt.Sprintf("flag --%s is not supported by nodelet and is ignored", f.Name))
		}
	})
	return warnings
}
