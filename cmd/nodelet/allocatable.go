package main

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/eviction"
	"github.com/nodelet/nodelet/pkg/options"
)

// reservations are the parsed --kube-reserved, --system-reserved and
// --eviction-hard. Options.Validate has refused bad ones, so parsing
// cannot fail here; should it, nothing is reserved rather than nodelet
// crashing (and Validate's error was already fatal).
type reservations struct {
	kube, system v1.ResourceList
	hard         []eviction.Threshold
}

func parseReservations(opts *options.Options) reservations {
	var r reservations
	r.kube, _ = options.ParseReserved(opts.KubeReserved)
	r.system, _ = options.ParseReserved(opts.SystemReserved)
	r.hard, _ = eviction.ParseMap(opts.EvictionHard)
	if r.hard == nil {
		r.hard = []eviction.Threshold{} // none, not upstream's defaults
	}
	return r
}

// reserved is kube-reserved plus system-reserved.
func (r reservations) reserved() v1.ResourceList {
	out := v1.ResourceList{}
	for _, rl := range []v1.ResourceList{r.kube, r.system} {
		for name, q := range rl {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}
