package cri

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrUnsupported marks pod spec features nodelet does not implement yet. A
// pod using one is reported, never run with the feature silently dropped.
var ErrUnsupported = errors.New("not supported yet")

// containerEnv resolves a container's env entries in order. A value may
// refer to entries defined before it with $(NAME).
func containerEnv(pod *v1.Pod, c *v1.Container, podIPs []string, opts ConfigOptions) ([]*runtimeapi.KeyValue, error) {
	if len(c.Env) == 0 {
		return nil, nil
	}
	out := make([]*runtimeapi.KeyValue, 0, len(c.Env))
	defined := make(map[string]string, len(c.Env))
	lookup := func(name string) (string, bool) { v, ok := defined[name]; return v, ok }
	for _, e := range c.Env {
		var v string
		if e.ValueFrom == nil {
			v = expand(e.Value, lookup)
		} else {
			var err error
			if v, err = envValueFrom(pod, e, podIPs, opts); err != nil {
				return nil, fmt.Errorf("env %q: %w", e.Name, err)
			}
		}
		// A later entry of the same name wins, as in a shell.
		defined[e.Name] = v
		out = append(out, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(v)})
	}
	return out, nil
}

// NeedsPodIP reports whether building the container's config needs the
// sandbox's IP, which costs a PodSandboxStatus call when the sandbox was
// just created.
func NeedsPodIP(c *v1.Container) bool {
	for _, e := range c.Env {
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			switch f.FieldRef.FieldPath {
			case "status.podIP", "status.podIPs":
				return true
			}
		}
	}
	return false
}

func envValueFrom(pod *v1.Pod, e v1.EnvVar, podIPs []string, opts ConfigOptions) (string, error) {
	src := e.ValueFrom
	switch {
	case src.FieldRef != nil:
		return fieldRef(pod, src.FieldRef.FieldPath, podIPs, opts)
	case src.ResourceFieldRef != nil:
		return "", fmt.Errorf("valueFrom.resourceFieldRef %w", ErrUnsupported)
	case src.ConfigMapKeyRef != nil:
		return "", fmt.Errorf("valueFrom.configMapKeyRef %w", ErrUnsupported)
	case src.SecretKeyRef != nil:
		return "", fmt.Errorf("valueFrom.secretKeyRef %w", ErrUnsupported)
	default:
		return "", errors.New("valueFrom has no source")
	}
}

func fieldRef(pod *v1.Pod, path string, podIPs []string, opts ConfigOptions) (string, error) {
	if pod.Spec.HostNetwork {
		// A host-network pod's IPs are the node's.
		podIPs = opts.NodeIPs
	}
	if v, ok := PodMetadataField(pod, path); ok {
		return v, nil
	}
	switch path {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return first(podIPs), nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP":
		return first(opts.NodeIPs), nil
	case "status.hostIPs":
		return strings.Join(opts.NodeIPs, ","), nil
	}
	return "", fmt.Errorf("valueFrom.fieldRef %q %w", path, ErrUnsupported)
}

// PodMetadataField resolves the fieldRef paths that read one value of the
// pod's own metadata, the part environment variables and downward API
// volumes share: metadata.name, .namespace, .uid, and one label or
// annotation (metadata.labels['key']). ok is false for any other path.
func PodMetadataField(pod *v1.Pod, path string) (value string, ok bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{
		{"metadata.labels['", pod.Labels},
		{"metadata.annotations['", pod.Annotations},
	} {
		if key, ok := strings.CutPrefix(path, m.prefix); ok && strings.HasSuffix(key, "']") {
			return m.values[strings.TrimSuffix(key, "']")], true
		}
	}
	return "", false
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func envLookup(env []*runtimeapi.KeyValue) func(string) (string, bool) {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		m[kv.Key] = string(kv.Value)
	}
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, lookup)
	}
	return out
}

// expand replaces $(NAME) with NAME's value when defined and leaves it as
// written otherwise; "$$" is a literal "$", so "$$(NAME)" stays "$(NAME)".
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			ref := s[i : i+3+end]
			if v, ok := lookup(s[i+2 : i+2+end]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
