package objects

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// Kind is the kind of a watched object.
type Kind string

// The kinds a pod references by name.
const (
	ConfigMap Kind = criconfig.KindConfigMap
	Secret    Kind = criconfig.KindSecret
)

// Ref is an API object a pod's volumes, environment or image pulls read.
type Ref struct {
	Kind            Kind
	Namespace, Name string
}

// PodRefs returns the config maps and secrets pod's volumes,
// containers' environment and image pulls read, each once.
func PodRefs(p *v1.Pod) []Ref {
	seen := map[Ref]bool{}
	var out []Ref
	add := func(kind Kind, name string) {
		r := Ref{kind, p.Namespace, name}
		if name != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			add(ConfigMap, v.ConfigMap.Name)
		case v.Secret != nil:
			add(Secret, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					add(ConfigMap, s.ConfigMap.Name)
				case s.Secret != nil:
					add(Secret, s.Secret.Name)
				}
			}
		}
	}
	for _, c := range criconfig.AllContainers(p) {
		for _, r := range criconfig.EnvObjectRefs(c) {
			add(Kind(r.Kind), r.Name)
		}
	}
	for _, ref := range p.Spec.ImagePullSecrets {
		add(Secret, ref.Name)
	}
	return out
}
