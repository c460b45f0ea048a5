// Package eviction holds the eviction thresholds of --eviction-hard /
// evictionHard: their parsing and what they take out of node allocatable.
// nodelet does not evict pods yet; the hard thresholds only lower the
// allocatable the node reports and admits pods against, as upstream's do.
package eviction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, as upstream names them.
type Signal string

// The signals upstream accepts in a threshold.
const (
	SignalMemoryAvailable       Signal = "memory.available"
	SignalAllocatableMemory     Signal = "allocatableMemory.available"
	SignalNodeFsAvailable       Signal = "nodefs.available"
	SignalNodeFsInodesFree      Signal = "nodefs.inodesFree"
	SignalImageFsAvailable      Signal = "imagefs.available"
	SignalImageFsInodesFree     Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable  Signal = "containerfs.available"
	SignalContainerFsInodesFree Signal = "containerfs.inodesFree"
	SignalPIDAvailable          Signal = "pid.available"
)

var knownSignals = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemory, SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree,
	SignalPIDAvailable,
}

// DefaultHard is upstream's default evictionHard (v1beta1 defaults).
func DefaultHard() map[string]string {
	return map[string]string{
		string(SignalMemoryAvailable):   "100Mi",
		string(SignalNodeFsAvailable):   "10%",
		string(SignalNodeFsInodesFree):  "5%",
		string(SignalImageFsAvailable):  "15%",
		string(SignalImageFsInodesFree): "5%",
	}
}

// Threshold is one hard threshold: the signal falls below either an
// absolute Quantity or a Percentage (0 < p <= 1) of the capacity.
type Threshold struct {
	Signal     Signal
	Quantity   *resource.Quantity
	Percentage float64
}

// ParseMap parses thresholds as the config file's evictionHard writes them
// (signal: value), in signal order. A value of "0" or "0%" means no
// threshold for that signal and is dropped (upstream: the signal is
// disabled). Unknown signals, bad or negative values and percentages over
// 100% are errors.
func ParseMap(m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, k := range slices.Sorted(maps.Keys(m)) {
		t, ok, err := parseOne(k, m[k])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func parseOne(signal, value string) (Threshold, bool, error) {
	s := Signal(strings.TrimSpace(signal))
	if !slices.Contains(knownSignals, s) {
		return Threshold{}, false, fmt.Errorf("eviction threshold: unknown signal %q (known: %v)", signal, knownSignals)
	}
	v := strings.TrimSpace(value)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return Threshold{}, false, fmt.Errorf("eviction threshold %s: bad percentage %q: %w", s, value, err)
		}
		if f < 0 || f > 100 {
			return Threshold{}, false, fmt.Errorf("eviction threshold %s: percentage %q must be between 0%% and 100%%", s, value)
		}
		if f == 0 {
			return Threshold{}, false, nil
		}
		return Threshold{Signal: s, Percentage: f / 100}, true, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return Threshold{}, false, fmt.Errorf("eviction threshold %s: bad quantity %q: %w", s, value, err)
	}
	if q.Sign() < 0 {
		return Threshold{}, false, fmt.Errorf("eviction threshold %s: %q must not be negative", s, value)
	}
	if q.IsZero() {
		return Threshold{}, false, nil
	}
	return Threshold{Signal: s, Quantity: &q}, true, nil
}

// ParseFlag splits the --eviction-hard form, "signal<value" pairs
// separated by ",", into the map form. Only "<" is an operator, as
// upstream; a signal given twice is an error.
func ParseFlag(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "<")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("eviction threshold %q: want signal<value, e.g. memory.available<100Mi", part)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("eviction threshold: signal %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// FormatFlag is the --eviction-hard form of m, in signal order.
func FormatFlag(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"<"+m[k])
	}
	return strings.Join(parts, ",")
}

// Reservation is what the hard thresholds take out of node allocatable, as
// upstream: memory.available from memory, nodefs.available from ephemeral
// storage, each as a quantity or a percentage of that capacity. Other
// signals reserve nothing.
func Reservation(thresholds []Threshold, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, t := range thresholds {
		var name v1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = v1.ResourceMemory
		case SignalNodeFsAvailable:
			name = v1.ResourceEphemeralStorage
		default:
			continue
		}
		if t.Quantity != nil {
			out[name] = t.Quantity.DeepCopy()
			continue
		}
		c, ok := capacity[name]
		if !ok {
			continue
		}
		out[name] = *resource.NewQuantity(int64(t.Percentage*float64(c.Value())), resource.BinarySI)
	}
	return out
}
