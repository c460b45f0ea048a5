package podsync

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// ObjectSource reads the config maps and secrets pods refer to (env vars,
// pull secrets), as the node: errors are the API's (NotFound for a missing
// object). Cluster mode only.
type ObjectSource interface {
	ConfigMap(ctx context.Context, pod *v1.Pod, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, pod *v1.Pod, name string) (*v1.Secret, error)
}

// readEnvObjects reads what c's environment refers to, for
// criconfig.ContainerConfig, which does no I/O. nil without a source, and for a
// static pod, which may not read API objects (the config says why).
func (s *Syncer) readEnvObjects(ctx context.Context, p *v1.Pod, c *v1.Container) *criconfig.EnvObjects {
	src := s.opts.Objects
	if src == nil || pod.IsStatic(p) {
		return nil
	}
	objs := &criconfig.EnvObjects{}
	for _, ref := range criconfig.EnvObjectRefs(c) {
		var err error
		switch ref.Kind {
		case criconfig.KindConfigMap:
			var cm *v1.ConfigMap
			if cm, err = src.ConfigMap(ctx, p, ref.Name); err == nil {
				setObject(&objs.ConfigMaps, ref.Name, cm)
			}
		case criconfig.KindSecret:
			var sec *v1.Secret
			if sec, err = src.Secret(ctx, p, ref.Name); err == nil {
				setObject(&objs.Secrets, ref.Name, sec)
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			setObject(&objs.Errors, ref.Key(), err)
		}
	}
	return objs
}

func setObject[T any](m *map[string]T, k string, v T) {
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[k] = v
}
