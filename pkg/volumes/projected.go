package volumes

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// DefaultMode is the mode of projected files when the volume names none
// (the API defaults it the same way).
const DefaultMode = v1.ProjectedVolumeSourceDefaultMode

// tokenFileModeWithFSGroup is the token's mode when the pod has an
// fsGroup: only the owner and, through the group bits the fsGroup adds, the
// pod's group may read it - not every user of the node's containers.
const tokenFileModeWithFSGroup = 0o600

// checkProjected fails for a projected volume this package cannot make
// for pod. It does no I/O.
func checkProjected(p *v1.Pod, v *v1.Volume) error {
	if v.Projected == nil {
		return fmt.Errorf("volume type %s %w", criconfig.VolumeType(v), criconfig.ErrUnsupported)
	}
	for i := range v.Projected.Sources {
		s := &v.Projected.Sources[i]
		switch {
		case s.ServiceAccountToken != nil, s.ConfigMap != nil, s.Secret != nil:
			// The Node authorizer lets a node read these only for API
			// pods that reference them; a static pod is not one.
			if pod.IsStatic(p) {
				return fmt.Errorf("projected %s: a static pod cannot use API objects", sourceKind(s))
			}
		case s.DownwardAPI != nil:
			for j := range s.DownwardAPI.Items {
				if err := checkDownwardItem(p, &s.DownwardAPI.Items[j]); err != nil {
					return fmt.Errorf("projected %w", err)
				}
			}
		default:
			return fmt.Errorf("projected source %s %w", sourceKind(s), criconfig.ErrUnsupported)
		}
	}
	return nil
}

// sourceKind names a projection source as the API spells it.
func sourceKind(s *v1.VolumeProjection) string {
	switch {
	case s.ServiceAccountToken != nil:
		return "serviceAccountToken"
	case s.ConfigMap != nil:
		return "configMap"
	case s.Secret != nil:
		return "secret"
	case s.DownwardAPI != nil:
		return "downwardAPI"
	case s.ClusterTrustBundle != nil:
		return "clusterTrustBundle"
	case s.PodCertificate != nil:
		return "podCertificate"
	}
	return "unknown"
}

// projector reads what projection sources refer to. The Provider's
// implementation uses the API server; tests use fakes.
type projector interface {
	configMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	token(ctx context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (string, error)
	// allocatable is the node's allocatable resources, what a
	// resourceFieldRef to an unset limit reads.
	allocatable() v1.ResourceList
}

// projectedFiles computes the content of a projected volume of pod. Errors
// name the source that failed, as upstream's "MountVolume.SetUp failed"
// messages do.
func projectedFiles(ctx context.Context, pr projector, p *v1.Pod, src *v1.ProjectedVolumeSource) (map[string]File, error) {
	defMode := DefaultMode
	if src.DefaultMode != nil {
		defMode = *src.DefaultMode
	}
	fsGroup := p.Spec.SecurityContext != nil && p.Spec.SecurityContext.FSGroup != nil
	out := map[string]File{}
	add := func(files map[string]File) error {
		for path, f := range files {
			if _, dup := out[path]; dup {
				return fmt.Errorf("path %q is projected twice", path)
			}
			out[path] = f
		}
		return nil
	}
	for i := range src.Sources {
		s := &src.Sources[i]
		var files map[string]File
		var err error
		switch {
		case s.ServiceAccountToken != nil:
			var tok string
			if tok, err = pr.token(ctx, p, s.ServiceAccountToken); err == nil {
				mode := defMode
				if fsGroup {
					mode = tokenFileModeWithFSGroup
				}
				files = map[string]File{s.ServiceAccountToken.Path: {Data: []byte(tok), Mode: os.FileMode(mode)}}
			}
		case s.ConfigMap != nil:
			files, err = configMapFiles(ctx, pr, p.Namespace, s.ConfigMap, defMode)
		case s.Secret != nil:
			files, err = secretFiles(ctx, pr, p.Namespace, s.Secret, defMode)
		case s.DownwardAPI != nil:
			files, err = downwardFiles(p, s.DownwardAPI.Items, defMode, pr.allocatable())
		default:
			err = fmt.Errorf("projected source %s %w", sourceKind(s), criconfig.ErrUnsupported)
		}
		if err == nil {
			err = add(files)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func configMapFiles(ctx context.Context, pr projector, ns string, s *v1.ConfigMapProjection, defMode int32) (map[string]File, error) {
	optional := s.Optional != nil && *s.Optional
	cm, err := pr.configMap(ctx, ns, s.Name)
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	if err != nil {
		// The API error names the object ("configmaps \"x\" not found").
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	files, err := keyFiles(data, s.Items, optional, defMode)
	if err != nil {
		return nil, fmt.Errorf("configmap %q: %w", s.Name, err)
	}
	return files, nil
}

func secretFiles(ctx context.Context, pr projector, ns string, s *v1.SecretProjection, defMode int32) (map[string]File, error) {
	optional := s.Optional != nil && *s.Optional
	sec, err := pr.secret(ctx, ns, s.Name)
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	files, err := keyFiles(sec.Data, s.Items, optional, defMode)
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", s.Name, err)
	}
	return files, nil
}

// keyFiles maps the keys of a config map or secret to files: every key
// under its own name, or only the listed items under their paths. A listed
// key that is missing fails unless the source is optional.
func keyFiles(data map[string][]byte, items []v1.KeyToPath, optional bool, defMode int32) (map[string]File, error) {
	out := make(map[string]File, len(data))
	if len(items) == 0 {
		for k, v := range data {
			out[k] = File{Data: v, Mode: os.FileMode(defMode)}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("no key %q", it.Key)
		}
		mode := defMode
		if it.Mode != nil {
			mode = *it.Mode
		}
		out[it.Path] = File{Data: v, Mode: os.FileMode(mode)}
	}
	return out, nil
}

func downwardFiles(p *v1.Pod, items []v1.DownwardAPIVolumeFile, defMode int32, allocatable v1.ResourceList) (map[string]File, error) {
	out := make(map[string]File, len(items))
	for i := range items {
		it := &items[i]
		if err := checkDownwardItem(p, it); err != nil {
			return nil, err
		}
		var val string
		var err error
		if it.ResourceFieldRef != nil {
			val, err = criconfig.ResourceFieldValue(p, nil, it.ResourceFieldRef, allocatable)
		} else {
			val, err = fieldValue(p, it.FieldRef.FieldPath)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI %q: %w", it.Path, err)
		}
		mode := defMode
		if it.Mode != nil {
			mode = *it.Mode
		}
		out[it.Path] = File{Data: []byte(val), Mode: os.FileMode(mode)}
	}
	return out, nil
}
