package cri

import (
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// Label and annotation keys. They are the upstream kubelet's, so a restarted
// nodelet adopts what it (or an upstream kubelet) left running, and tools
// that read them (crictl, log collectors) keep working.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationContainerHash                     = "io.kubernetes.container.hash"
	AnnotationContainerRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationContainerTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationContainerTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodTerminationGracePeriod         = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationPodDeletionGracePeriod            = "io.kubernetes.pod.deletionGracePeriod"
	// AnnotationContainerPreStopHandler and AnnotationContainerPorts hold
	// the JSON of the container's preStop handler and ports, as upstream
	// writes them: an upstream kubelet that takes the node over reads them
	// to stop a container whose pod is gone with its preStop hook.
	AnnotationContainerPreStopHandler = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts          = "io.kubernetes.container.ports"

	// AnnotationContainerSpecHash has no upstream counterpart: the hash of
	// a static pod container's whole spec (runtime.HashContainerSpec), so
	// that an edit of its manifest restarts that container. Absent on API
	// pods' containers and on containers made by someone else.
	AnnotationContainerSpecHash = "nodelet.io/container.specHash"

	// AnnotationSandboxHostNetwork has no upstream counterpart. It lets a
	// status read skip PodSandboxStatus for host-network sandboxes, whose IP
	// is the node's anyway. Absent on sandboxes made by someone else, which
	// then cost one PodSandboxStatus call.
	AnnotationSandboxHostNetwork = "nodelet.io/sandbox.hostNetwork"
)

// ErrNotManaged means labels lack the pod identity a kubelet stamps: the
// object was not created by nodelet or a kubelet and must be left alone.
var ErrNotManaged = errors.New("not managed by a kubelet")

// ErrMalformedIdentity means the identity labels are there but an annotation
// does not parse. The object is ours; the returned identity carries whatever
// did parse, so callers can still stop it, and its zero hash makes it look
// out of date, which gets it replaced.
var ErrMalformedIdentity = errors.New("malformed identity annotation")

// SandboxIdentity is what nodelet stamps on a pod sandbox.
type SandboxIdentity struct {
	PodName      string
	PodNamespace string
	PodUID       types.UID
	// HostNetwork records that the sandbox shares the node's network
	// namespace.
	HostNetwork bool
}

// Labels returns the identity labels of the sandbox.
func (s SandboxIdentity) Labels() map[string]string {
	return map[string]string{
		LabelPodName:      s.PodName,
		LabelPodNamespace: s.PodNamespace,
		LabelPodUID:       string(s.PodUID),
	}
}

// Annotations returns the identity annotations of the sandbox.
func (s SandboxIdentity) Annotations() map[string]string {
	if !s.HostNetwork {
		return map[string]string{}
	}
	return map[string]string{AnnotationSandboxHostNetwork: "true"}
}

// ParseSandboxIdentity reads a sandbox identity back from its labels and
// annotations. It fails with ErrNotManaged when the pod labels are missing.
func ParseSandboxIdentity(labels, annotations map[string]string) (SandboxIdentity, error) {
	id := SandboxIdentity{
		PodName:      labels[LabelPodName],
		PodNamespace: labels[LabelPodNamespace],
		PodUID:       types.UID(labels[LabelPodUID]),
	}
	if id.PodUID == "" || id.PodName == "" || id.PodNamespace == "" {
		return id, fmt.Errorf("sandbox labels %v: %w", labels, ErrNotManaged)
	}
	if v, ok := annotations[AnnotationSandboxHostNetwork]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return id, fmt.Errorf("annotation %s=%q: %w", AnnotationSandboxHostNetwork, v, ErrMalformedIdentity)
		}
		id.HostNetwork = b
	}
	return id, nil
}

// ContainerIdentity is what nodelet stamps on each container: which pod and
// spec entry it belongs to, which spec it was created from, and the facts
// needed to stop it properly even after its pod spec is gone.
type ContainerIdentity struct {
	PodName       string
	PodNamespace  string
	PodUID        types.UID
	ContainerName string
	// Hash is runtime.HashContainer of the spec the container was created
	// from: upstream's hash, hex in its annotation as upstream writes it.
	Hash uint64
	// SpecHash is runtime.HashContainerSpec of the spec, for the containers
	// of static pods; 0 when not stamped.
	SpecHash uint64
	// RestartCount is the attempt number of this instance, 0 for the first.
	RestartCount int
	// TerminationGracePeriod is the pod's terminationGracePeriodSeconds at
	// creation; nil when the spec left it unset.
	TerminationGracePeriod *int64
	// DeletionGracePeriod is the pod's deletionGracePeriodSeconds at creation,
	// set only when the pod was already being deleted.
	DeletionGracePeriod      *int64
	TerminationMessagePath   string
	TerminationMessagePolicy string
	// PreStopHandler and Ports are the JSON upstream stamps of the
	// container's lifecycle.preStop and ports ("" when it has none). nodelet
	// writes them for an upstream kubelet's sake and reads them back as is.
	PreStopHandler string
	Ports          string
}

// Labels returns the identity labels of the container. Labels are the part a
// runtime can filter on, so they carry only the pod and container names.
func (c ContainerIdentity) Labels() map[string]string {
	return map[string]string{
		LabelPodName:       c.PodName,
		LabelPodNamespace:  c.PodNamespace,
		LabelPodUID:        string(c.PodUID),
		LabelContainerName: c.ContainerName,
	}
}

// Annotations returns the identity annotations of the container. The hash is
// hex, as upstream writes it.
func (c ContainerIdentity) Annotations() map[string]string {
	a := map[string]string{
		AnnotationContainerHash:         strconv.FormatUint(c.Hash, 16),
		AnnotationContainerRestartCount: strconv.Itoa(c.RestartCount),
	}
	if c.TerminationGracePeriod != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*c.TerminationGracePeriod, 10)
	}
	if c.DeletionGracePeriod != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*c.DeletionGracePeriod, 10)
	}
	if c.TerminationMessagePath != "" {
		a[AnnotationContainerTerminationMessagePath] = c.TerminationMessagePath
	}
	if c.TerminationMessagePolicy != "" {
		a[AnnotationContainerTerminationMessagePolicy] = c.TerminationMessagePolicy
	}
	if c.SpecHash != 0 {
		a[AnnotationContainerSpecHash] = strconv.FormatUint(c.SpecHash, 16)
	}
	if c.PreStopHandler != "" {
		a[AnnotationContainerPreStopHandler] = c.PreStopHandler
	}
	if c.Ports != "" {
		a[AnnotationContainerPorts] = c.Ports
	}
	return a
}

// ParseContainerIdentity reads a container identity back from its labels and
// annotations. Missing pod or container labels fail with ErrNotManaged; an
// annotation that does not parse fails with ErrMalformedIdentity, and the
// identity returned then holds every field that did parse.
func ParseContainerIdentity(labels, annotations map[string]string) (ContainerIdentity, error) {
	id := ContainerIdentity{
		PodName:                  labels[LabelPodName],
		PodNamespace:             labels[LabelPodNamespace],
		PodUID:                   types.UID(labels[LabelPodUID]),
		ContainerName:            labels[LabelContainerName],
		TerminationMessagePath:   annotations[AnnotationContainerTerminationMessagePath],
		TerminationMessagePolicy: annotations[AnnotationContainerTerminationMessagePolicy],
		PreStopHandler:           annotations[AnnotationContainerPreStopHandler],
		Ports:                    annotations[AnnotationContainerPorts],
	}
	if id.PodUID == "" || id.PodName == "" || id.PodNamespace == "" || id.ContainerName == "" {
		return id, fmt.Errorf("container labels %v: %w", labels, ErrNotManaged)
	}

	var errs []error
	if v, ok := annotations[AnnotationContainerHash]; ok {
		if h, err := strconv.ParseUint(v, 16, 64); err != nil {
			errs = append(errs, malformed(AnnotationContainerHash, v))
		} else {
			id.Hash = h
		}
	} else {
		errs = append(errs, fmt.Errorf("annotation %s missing: %w", AnnotationContainerHash, ErrMalformedIdentity))
	}
	if v, ok := annotations[AnnotationContainerSpecHash]; ok {
		if h, err := strconv.ParseUint(v, 16, 64); err != nil {
			// Left 0: the container is compared by its upstream hash only.
			errs = append(errs, malformed(AnnotationContainerSpecHash, v))
		} else {
			id.SpecHash = h
		}
	}
	if v, ok := annotations[AnnotationContainerRestartCount]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, malformed(AnnotationContainerRestartCount, v))
		} else {
			id.RestartCount = n
		}
	}
	for _, f := range []struct {
		key string
		dst **int64
	}{
		{AnnotationPodTerminationGracePeriod, &id.TerminationGracePeriod},
		{AnnotationPodDeletionGracePeriod, &id.DeletionGracePeriod},
	} {
		key, dst := f.key, f.dst
		v, ok := annotations[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, malformed(key, v))
			continue
		}
		*dst = &n
	}
	return id, errors.Join(errs...)
}

func malformed(key, value string) error {
	return fmt.Errorf("annotation %s=%q: %w", key, value, ErrMalformedIdentity)
}
