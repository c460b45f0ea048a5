package criconfig

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ParseResolvConf reads the nameserver, search and options lines of a
// resolv.conf.
func ParseResolvConf(r io.Reader) (*runtimeapi.DNSConfig, error) {
	cfg := &runtimeapi.DNSConfig{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, f[1])
		case "search":
			// The last search line wins, as in the resolver.
			cfg.Searches = slices.Clone(f[1:])
		case "options":
			cfg.Options = append(cfg.Options, f[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read resolv.conf: %w", err)
	}
	return cfg, nil
}

// DNSConfig returns the resolver configuration of a pod's sandbox, per its
// dnsPolicy: the node's resolver for host-network pods and the Default
// policy, the cluster DNS for ClusterFirst pods when one is configured, and
// only the pod's own dnsConfig for policy None. The pod's dnsConfig is
// added on top in every case. Nil means "the runtime copies the node's
// resolv.conf".
func DNSConfig(pod *v1.Pod, opts ConfigOptions) *runtimeapi.DNSConfig {
	var cfg *runtimeapi.DNSConfig
	useCluster := len(opts.ClusterDNS) > 0
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case v1.DNSDefault:
		cfg = cloneDNS(opts.HostDNS)
	case v1.DNSClusterFirstWithHostNet:
		if useCluster {
			cfg = clusterDNS(pod, opts)
		} else {
			cfg = cloneDNS(opts.HostDNS)
		}
	default: // ClusterFirst, the API default
		if useCluster && !pod.Spec.HostNetwork {
			cfg = clusterDNS(pod, opts)
		} else {
			cfg = cloneDNS(opts.HostDNS)
		}
	}
	pc := pod.Spec.DNSConfig
	if pc == nil {
		return cfg
	}
	if cfg == nil {
		cfg = &runtimeapi.DNSConfig{}
	}
	cfg.Servers = appendNew(cfg.Servers, pc.Nameservers...)
	cfg.Searches = appendNew(cfg.Searches, pc.Searches...)
	for _, o := range pc.Options {
		opt := o.Name
		if o.Value != nil {
			opt += ":" + *o.Value
		}
		// A pod option replaces a node option of the same name.
		cfg.Options = slices.DeleteFunc(cfg.Options, func(s string) bool {
			name, _, _ := strings.Cut(s, ":")
			return name == o.Name
		})
		cfg.Options = append(cfg.Options, opt)
	}
	return cfg
}

func clusterDNS(pod *v1.Pod, opts ConfigOptions) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{
		Servers: slices.Clone(opts.ClusterDNS),
		Options: []string{"ndots:5"},
	}
	if d := opts.ClusterDomain; d != "" {
		cfg.Searches = []string{pod.Namespace + ".svc." + d, "svc." + d, d}
	}
	if opts.HostDNS != nil {
		cfg.Searches = appendNew(cfg.Searches, opts.HostDNS.Searches...)
	}
	return cfg
}

func cloneDNS(c *runtimeapi.DNSConfig) *runtimeapi.DNSConfig {
	if c == nil {
		return nil
	}
	return &runtimeapi.DNSConfig{
		Servers:  slices.Clone(c.Servers),
		Searches: slices.Clone(c.Searches),
		Options:  slices.Clone(c.Options),
	}
}

func appendNew(s []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(s, a) {
			s = append(s, a)
		}
	}
	return s
}
