package options

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// headerValue is the pflag.Value behind --manifest-url-header: comma-separated
// "key:value" pairs, repeatable, where repeating a key appends a value. So
// "--manifest-url-header 'a:hello,b:again' --manifest-url-header 'b:beautiful'"
// gives a=[hello] b=[again beautiful], as upstream.
type headerValue struct {
	m map[string][]string
	// set records whether the user gave the flag, so the first Set replaces
	// the default instead of appending to it.
	set bool
}

func (h *headerValue) Set(s string) error {
	if !h.set {
		h.m = map[string][]string{}
		h.set = true
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("malformed header %q, want key:value", pair)
		}
		h.m[k] = append(h.m[k], strings.TrimSpace(v))
	}
	return nil
}

func (h *headerValue) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(h.m)) {
		for _, v := range h.m[k] {
			pairs = append(pairs, k+":"+v)
		}
	}
	return strings.Join(pairs, ",")
}

func (h *headerValue) Type() string { return "key:value" }
