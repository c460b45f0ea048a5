package volumes

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// asProjection returns the content of a configMap, secret, downwardAPI or
// projected volume as one projected source: the plain volume types are a
// projection with a single source, and sharing the rendering keeps their
// semantics (items, modes, optional) the same. ok is false for other
// volume types.
func asProjection(v *v1.Volume) (src *v1.ProjectedVolumeSource, ok bool) {
	switch {
	case v.Projected != nil:
		return v.Projected, true
	case v.ConfigMap != nil:
		c := v.ConfigMap
		return &v1.ProjectedVolumeSource{DefaultMode: c.DefaultMode, Sources: []v1.VolumeProjection{{
			ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: c.LocalObjectReference, Items: c.Items, Optional: c.Optional},
		}}}, true
	case v.Secret != nil:
		s := v.Secret
		return &v1.ProjectedVolumeSource{DefaultMode: s.DefaultMode, Sources: []v1.VolumeProjection{{
			Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: s.SecretName}, Items: s.Items, Optional: s.Optional},
		}}}, true
	case v.DownwardAPI != nil:
		d := v.DownwardAPI
		return &v1.ProjectedVolumeSource{DefaultMode: d.DefaultMode, Sources: []v1.VolumeProjection{{
			DownwardAPI: &v1.DownwardAPIProjection{Items: d.Items},
		}}}, true
	}
	return nil, false
}

// checkVolume fails for a volume this package cannot make for p. It does no
// I/O.
func checkVolume(p *v1.Pod, v *v1.Volume) error {
	src, ok := asProjection(v)
	if !ok {
		return fmt.Errorf("volume type %s %w", criconfig.VolumeType(v), criconfig.ErrUnsupported)
	}
	if v.Projected == nil && pod.IsStatic(p) && (v.ConfigMap != nil || v.Secret != nil) {
		// The Node authorizer lets a node read these only for API pods
		// that reference them; a static pod is not one (upstream refuses
		// them the same way).
		return fmt.Errorf("%s: a static pod cannot use API objects", criconfig.VolumeType(v))
	}
	return checkProjected(p, &v1.Volume{Name: v.Name, VolumeSource: v1.VolumeSource{Projected: src}})
}
