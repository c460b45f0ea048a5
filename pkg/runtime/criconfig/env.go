package criconfig

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// ErrUnsupported marks pod spec features nodelet does not implement yet. A
// pod using one is reported, never run with the feature silently dropped.
var ErrUnsupported = errors.New("not supported yet")

// EnvObjects are the config maps and secrets a container's environment
// refers to (EnvObjectRefs), as read from the API before its config is
// built. An object in neither its map nor Errors was not found.
type EnvObjects struct {
	ConfigMaps map[string]*v1.ConfigMap
	Secrets    map[string]*v1.Secret
	// Errors are the reads that failed otherwise, by EnvObjectKey.
	Errors map[string]error
}

// Kinds of EnvObjectRef.
const (
	KindConfigMap = "configmap"
	KindSecret    = "secret"
)

// EnvObjectRef names a config map or secret a container's environment
// refers to.
type EnvObjectRef struct {
	Kind string // KindConfigMap or KindSecret
	Name string
}

// Key is the ref's key in EnvObjects.Errors.
func (r EnvObjectRef) Key() string { return r.Kind + "/" + r.Name }

// EnvObjectRefs lists the config maps and secrets c's environment refers
// to, each once, in the order they are used.
func EnvObjectRefs(c *v1.Container) []EnvObjectRef {
	var refs []EnvObjectRef
	seen := map[EnvObjectRef]bool{}
	add := func(kind, name string) {
		if r := (EnvObjectRef{kind, name}); !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			add(KindConfigMap, from.ConfigMapRef.Name)
		case from.SecretRef != nil:
			add(KindSecret, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch src := e.ValueFrom; {
		case src == nil:
		case src.ConfigMapKeyRef != nil:
			add(KindConfigMap, src.ConfigMapKeyRef.Name)
		case src.SecretKeyRef != nil:
			add(KindSecret, src.SecretKeyRef.Name)
		}
	}
	return refs
}

// ReasonInvalidEnvironmentVariableNames is the event reason for envFrom keys
// skipped because they are no variable names (upstream's).
const ReasonInvalidEnvironmentVariableNames = "InvalidEnvironmentVariableNames"

// ContainerEnv resolves a container's environment the way upstream does:
// envFrom sources first (keys with their prefix; keys that are no variable
// names are skipped and reported through p.Warn), then env entries in order
// (a later definition of a name wins; $(NAME) in a value refers to what is
// defined before it and to the service variables), then the service
// variables (opts.ServiceEnv) not defined otherwise. A missing non-optional
// config map, secret or key fails with upstream's message; the container
// cannot start (CreateContainerConfigError).
func ContainerEnv(pod *v1.Pod, c *v1.Container, p ContainerParams, opts ConfigOptions) ([]*runtimeapi.KeyValue, error) {
	return containerEnv(pod, c, p, opts)
}

func containerEnv(pod *v1.Pod, c *v1.Container, p ContainerParams, opts ConfigOptions) ([]*runtimeapi.KeyValue, error) {
	var service map[string]string
	if opts.ServiceEnv != nil {
		var err error
		if service, err = opts.ServiceEnv(pod); err != nil {
			return nil, err
		}
	}
	if len(c.Env) == 0 && len(c.EnvFrom) == 0 && len(service) == 0 {
		return nil, nil
	}
	env := newEnvList(len(c.Env))
	objs := envObjects{pod: pod, src: p.EnvObjects}
	for _, from := range c.EnvFrom {
		if err := envFrom(env, &objs, from, p.Warn); err != nil {
			return nil, err
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := env.values[name]; ok {
			return v, true
		}
		v, ok := service[name]
		return v, ok
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env.set(e.Name, expand(e.Value, lookup))
			continue
		}
		v, skip, err := envValueFrom(pod, c, e, &objs, p.PodIPs, opts)
		if err != nil {
			return nil, fmt.Errorf("env %q: %w", e.Name, err)
		}
		if !skip {
			env.set(e.Name, v)
		}
	}
	for _, k := range sortedEnvKeys(service) {
		if _, ok := env.values[k]; !ok {
			env.set(k, service[k])
		}
	}
	return env.list(), nil
}

// envList is an environment in first-definition order; a redefinition
// replaces the value in place.
type envList struct {
	order  []string
	values map[string]string
}

func newEnvList(n int) *envList { return &envList{values: make(map[string]string, n)} }

func (l *envList) set(k, v string) {
	if _, ok := l.values[k]; !ok {
		l.order = append(l.order, k)
	}
	l.values[k] = v
}

func (l *envList) list() []*runtimeapi.KeyValue {
	out := make([]*runtimeapi.KeyValue, 0, len(l.order))
	for _, k := range l.order {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(l.values[k])})
	}
	return out
}

// envObjects looks up what was read for a container's environment.
type envObjects struct {
	pod *v1.Pod
	src *EnvObjects
}

// errStaticPodObjects: the Node authorizer lets a node read config maps
// and secrets only for API pods referencing them; upstream refuses static
// pods that use them too.
var errStaticPodObjects = errors.New("a static pod cannot use API objects")

func (o *envObjects) configMap(name string) (*v1.ConfigMap, error) {
	if err := o.usable(); err != nil {
		return nil, fmt.Errorf("couldn't get configMap %s/%s: %w", o.pod.Namespace, name, err)
	}
	if err := o.src.Errors[EnvObjectRef{KindConfigMap, name}.Key()]; err != nil {
		return nil, notFoundAsUpstream(err, KindConfigMap, name)
	}
	if cm, ok := o.src.ConfigMaps[name]; ok {
		return cm, nil
	}
	return nil, notFound(KindConfigMap, name)
}

func (o *envObjects) secret(name string) (*v1.Secret, error) {
	if err := o.usable(); err != nil {
		return nil, fmt.Errorf("couldn't get secret %s/%s: %w", o.pod.Namespace, name, err)
	}
	if err := o.src.Errors[EnvObjectRef{KindSecret, name}.Key()]; err != nil {
		return nil, notFoundAsUpstream(err, KindSecret, name)
	}
	if s, ok := o.src.Secrets[name]; ok {
		return s, nil
	}
	return nil, notFound(KindSecret, name)
}

func (o *envObjects) usable() error {
	if isStaticPod(o.pod) {
		return errStaticPodObjects
	}
	if o.src == nil {
		return errors.New("no API client (needs --kubeconfig)")
	}
	return nil
}

// notFoundAsUpstream words a missing object as upstream's kubelet does
// (`configmap "x" not found`), keeping it a NotFound error.
func notFoundAsUpstream(err error, resource, name string) error {
	if apierrors.IsNotFound(err) {
		return notFound(resource, name)
	}
	return err
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// envFrom adds the keys of one envFrom source to env.
func envFrom(env *envList, objs *envObjects, from v1.EnvFromSource, warn func(reason, msg string)) error {
	var data map[string]string
	var kind, name string
	switch {
	case from.ConfigMapRef != nil:
		kind, name = "configMap", from.ConfigMapRef.Name
		cm, err := objs.configMap(name)
		if err != nil {
			if apierrors.IsNotFound(err) && ptrTrue(from.ConfigMapRef.Optional) {
				return nil
			}
			return err
		}
		data = cm.Data
	case from.SecretRef != nil:
		kind, name = "secret", from.SecretRef.Name
		s, err := objs.secret(name)
		if err != nil {
			if apierrors.IsNotFound(err) && ptrTrue(from.SecretRef.Optional) {
				return nil
			}
			return err
		}
		data = make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
	default:
		return errors.New("envFrom has no source")
	}
	var invalid []string
	for _, k := range sortedEnvKeys(data) {
		name := from.Prefix + k
		if !IsEnvVarName(name) {
			invalid = append(invalid, name)
			continue
		}
		env.set(name, data[k])
	}
	if len(invalid) > 0 && warn != nil {
		warn(ReasonInvalidEnvironmentVariableNames, fmt.Sprintf(
			"Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
			strings.Join(invalid, ", "), kind, objs.pod.Namespace, name))
	}
	return nil
}

// IsEnvVarName reports whether s may name an environment variable: any
// printable ASCII character but "=", as the API accepts since relaxed
// environment variable validation.
func IsEnvVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' || s[i] == '=' {
			return false
		}
	}
	return true
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

// envValueFrom resolves one valueFrom; skip is true for an optional
// reference to something missing (the variable is not set at all).
func envValueFrom(pod *v1.Pod, c *v1.Container, e v1.EnvVar, objs *envObjects, podIPs []string, opts ConfigOptions) (v string, skip bool, err error) {
	src := e.ValueFrom
	switch {
	case src.FieldRef != nil:
		v, err = fieldRef(pod, src.FieldRef.FieldPath, podIPs, opts)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err = ResourceFieldValue(pod, c, src.ResourceFieldRef, opts.NodeAllocatable)
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := objs.configMap(ref.Name)
		if err != nil {
			return "", apierrors.IsNotFound(err) && ptrTrue(ref.Optional), ignoreOptional(err, ref.Optional)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, false, nil
		}
		if ptrTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := objs.secret(ref.Name)
		if err != nil {
			return "", apierrors.IsNotFound(err) && ptrTrue(ref.Optional), ignoreOptional(err, ref.Optional)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), false, nil
		}
		if ptrTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
	default:
		return "", false, errors.New("valueFrom has no source")
	}
}

// ignoreOptional drops a NotFound error of an optional reference.
func ignoreOptional(err error, optional *bool) error {
	if apierrors.IsNotFound(err) && ptrTrue(optional) {
		return nil
	}
	return err
}

func ptrTrue(b *bool) bool { return b != nil && *b }

func sortedEnvKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fieldRef(pod *v1.Pod, path string, podIPs []string, opts ConfigOptions) (string, error) {
	if pod.Spec.HostNetwork {
		// A host-network pod's IPs are the node's.
		podIPs = opts.NodeIPs
	} else {
		// As status.podIPs: the node's primary family first, whatever
		// order the runtime reported them in.
		podIPs = runtime.OrderPodIPs(podIPs, opts.NodeIPs)
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
