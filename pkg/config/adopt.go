package config

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/pod"
)

// Taking a node over from another agent (the upstream kubelet) without
// restarting its static pods.
//
// Upstream derives a static pod's UID from an md5 of its internal Go
// representation, which nodelet cannot reproduce without upstream's code;
// nodelet keeps its own rule (StaticPodUID). A static pod that already runs
// in the runtime under another agent's UID, found at start by its source,
// namespace and name, keeps that UID instead: its sandbox, containers, pod
// directory (emptyDir data) and log directory are all keyed by it, so the
// pod is adopted as it runs and the other agent, started again later, finds
// its own pod. Its config hash is the other agent's too (upstream's is the
// UID), so the mirror pod the other agent made stays valid, as long as the
// manifest keeps the content nodelet first saw; an edit gives the pod
// nodelet's own hash, and the mirror pod is replaced as on any edit.

// AdoptKey names a static pod across agents: its config source (file or
// http), namespace and full (node-suffixed) name.
type AdoptKey struct {
	Source, Namespace, Name string
}

// Running is the identity under which a static pod runs in the runtime.
type Running struct {
	UID types.UID
	// Hash is the kubernetes.io/config.hash its sandbox carries ("": use
	// the UID, which is upstream's config hash).
	Hash string
}

// Adoptions holds the static pods found running at start and what was
// adopted of them. Safe for concurrent use (the file and URL sources share
// it). A nil *Adoptions adopts nothing.
type Adoptions struct {
	mu      sync.Mutex
	running map[AdoptKey]Running
	// pinned is the config hash nodelet computed when it first adopted a
	// pod: while the manifest hashes the same, the running hash is kept.
	pinned map[AdoptKey]string
}

// NewAdoptions returns adoptions of the pods in running.
func NewAdoptions(running map[AdoptKey]Running) *Adoptions {
	return &Adoptions{running: running, pinned: map[AdoptKey]string{}}
}

// Apply returns p as it runs: p itself when nothing is adopted, else a copy
// with the adopted UID and config hash.
func (a *Adoptions) Apply(p *v1.Pod) *v1.Pod {
	if a == nil || p == nil {
		return p
	}
	key := AdoptKey{Source: p.Annotations[pod.ConfigSourceAnnotationKey], Namespace: p.Namespace, Name: p.Name}
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.running[key]
	if !ok {
		return p
	}
	pin, pinned := a.pinned[key]
	uid, hash, pin := Adopt(p.UID, p.Annotations[pod.ConfigHashAnnotationKey], r, pin, pinned)
	a.pinned[key] = pin
	if uid == p.UID && hash == p.Annotations[pod.ConfigHashAnnotationKey] {
		return p
	}
	out := p.DeepCopy()
	out.UID = uid
	out.Annotations[pod.ConfigHashAnnotationKey] = hash
	return out
}

// Adopt decides the UID and config hash of a static pod that nodelet
// computed as (uid, hash) and that runs as r; pin is the hash nodelet
// computed when it first adopted the pod (pinned false: this is the first
// time). It returns the pin to keep.
//
// A pod already running under nodelet's own UID is nodelet's: nothing is
// adopted. Otherwise the running UID is kept for good (nodelet's own rule
// keeps a UID across edits too), and the running hash as long as nodelet's
// hash is the one pinned.
func Adopt(uid types.UID, hash string, r Running, pin string, pinned bool) (types.UID, string, string) {
	if r.UID == "" || r.UID == uid {
		return uid, hash, pin
	}
	if !pinned {
		pin = hash
	}
	if hash != pin {
		return r.UID, hash, pin
	}
	running := r.Hash
	if running == "" {
		running = string(r.UID)
	}
	return r.UID, running, pin
}

// WithAdoptions makes a file or URL source give static pods found running
// under another agent's identity that identity (see Adoptions).
func WithAdoptions(a *Adoptions) SourceOption {
	return func(o *sourceOptions) { o.adoptions = a }
}

// adoptAll applies a to every pod, in place in the slice.
func adoptAll(a *Adoptions, pods []*v1.Pod) []*v1.Pod {
	if a == nil {
		return pods
	}
	for i, p := range pods {
		pods[i] = a.Apply(p)
	}
	return pods
}
