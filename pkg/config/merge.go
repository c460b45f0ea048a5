package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/pkg/pod"
)

// changes is what one input did to the pods of a source, one list per
// operation.
type changes struct {
	removes, adds, updates, deletes, reconciles []*v1.Pod
}

func (c *changes) empty() bool {
	return len(c.removes)+len(c.adds)+len(c.updates)+len(c.deletes)+len(c.reconciles) == 0
}

// podUpdates lists the changes as the incremental output of one input, in
// the contract order REMOVE, ADD, UPDATE, DELETE, RECONCILE, leaving out
// empty operations. The first input of a source yields at least an empty ADD
// so the consumer learns the source has reported.
func (c *changes) podUpdates(source string, first bool) []PodUpdate {
	var out []PodUpdate
	for _, op := range []struct {
		op   Operation
		pods []*v1.Pod
	}{{REMOVE, c.removes}, {ADD, c.adds}, {UPDATE, c.updates}, {DELETE, c.deletes}, {RECONCILE, c.reconciles}} {
		if len(op.pods) > 0 {
			out = append(out, PodUpdate{Op: op.op, Source: source, Pods: op.pods})
		}
	}
	if first && len(out) == 0 {
		out = append(out, PodUpdate{Op: ADD, Source: source, Pods: []*v1.Pod{}})
	}
	return out
}

// applyUpdate computes the pods of a source after one input from it, and what
// changed. It is pure: cur and the input's pods are not modified, and the
// pods in next are either cur's (unchanged) or fresh copies, so the caller
// may treat every stored pod as immutable. Pods it refuses (no UID, a UID or
// full name already used earlier in the same input) are returned as errors.
//
// SET replaces the source's pods; ADD, UPDATE, DELETE and RECONCILE inputs
// are upserts classified the same way; REMOVE forgets the listed UIDs.
func applyUpdate(cur map[types.UID]*v1.Pod, in PodUpdate, source string, now time.Time) (next map[types.UID]*v1.Pod, ch changes, rejected []error) {
	switch in.Op {
	case REMOVE:
		next = maps.Clone(cur)
		if next == nil {
			next = map[types.UID]*v1.Pod{}
		}
		for _, p := range in.Pods {
			if p == nil {
				continue
			}
			if old, ok := next[p.UID]; ok {
				delete(next, p.UID)
				ch.removes = append(ch.removes, old)
			}
		}
		sortPods(ch.removes)
		return next, ch, nil
	case SET:
		next = make(map[types.UID]*v1.Pod, len(in.Pods))
	case ADD, UPDATE, DELETE, RECONCILE:
		next = maps.Clone(cur)
		if next == nil {
			next = map[types.UID]*v1.Pod{}
		}
	default:
		next = maps.Clone(cur)
		if next == nil {
			next = map[types.UID]*v1.Pod{}
		}
		return next, ch, []error{fmt.Errorf("unknown operation %d from source %q", in.Op, source)}
	}

	pods, rejected := acceptablePods(in.Pods)
	for _, p := range pods {
		incoming := p.DeepCopy()
		if incoming.Annotations == nil {
			incoming.Annotations = map[string]string{}
		}
		incoming.Annotations[pod.ConfigSourceAnnotationKey] = source
		old, ok := cur[p.UID]
		if !ok {
			incoming.Annotations[pod.ConfigFirstSeenAnnotationKey] = now.Format(time.RFC3339Nano)
			next[p.UID] = incoming
			ch.adds = append(ch.adds, incoming)
			continue
		}
		v := classify(old, incoming)
		if v == unchanged {
			next[p.UID] = old
			continue
		}
		// First-seen is when the pod first reached this node, whatever
		// happened to it since.
		seen, ok := old.Annotations[pod.ConfigFirstSeenAnnotationKey]
		if !ok {
			seen = now.Format(time.RFC3339Nano)
		}
		incoming.Annotations[pod.ConfigFirstSeenAnnotationKey] = seen
		next[p.UID] = incoming
		switch v {
		case needUpdate:
			ch.updates = append(ch.updates, incoming)
		case needDelete:
			ch.deletes = append(ch.deletes, incoming)
		case needReconcile:
			ch.reconciles = append(ch.reconciles, incoming)
		}
	}
	if in.Op == SET {
		for uid, old := range cur {
			if _, ok := next[uid]; !ok {
				ch.removes = append(ch.removes, old)
			}
		}
		sortPods(ch.removes)
	}
	return next, ch, rejected
}

// acceptablePods drops pods the merger cannot key: without a UID, or with a
// UID or full name already taken earlier in the same input. The first one
// wins, which for a sorted snapshot is deterministic.
func acceptablePods(in []*v1.Pod) ([]*v1.Pod, []error) {
	var errs []error
	out := make([]*v1.Pod, 0, len(in))
	uids := sets.New[types.UID]()
	names := sets.New[string]()
	for _, p := range in {
		switch {
		case p == nil:
			continue
		case p.UID == "":
			errs = append(errs, fmt.Errorf("pod %s/%s has no UID; ignoring it", p.Namespace, p.Name))
		case uids.Has(p.UID):
			errs = append(errs, fmt.Errorf("pod %s/%s: UID %s is already used by another pod of this source; ignoring it", p.Namespace, p.Name, p.UID))
		case names.Has(pod.FullName(p)):
			errs = append(errs, fmt.Errorf("pod %s/%s (UID %s): a pod of this source already has that name; ignoring it", p.Namespace, p.Name, p.UID))
		default:
			uids.Insert(p.UID)
			names.Insert(pod.FullName(p))
			out = append(out, p)
		}
	}
	return out, errs
}

type verdict int

const (
	unchanged verdict = iota
	needUpdate
	needDelete
	needReconcile
)

// classify decides what a new version of a known pod means for the node.
// Spec, labels, annotations and deletion are what the node acts on; a change
// there is an UPDATE, or a DELETE if the pod is being deleted. Otherwise a
// status change is only a RECONCILE: the node is the source of truth for
// status and only needs to notice the API disagrees.
func classify(old, incoming *v1.Pod) verdict {
	if !sameDesired(old, incoming) {
		if incoming.DeletionTimestamp != nil {
			return needDelete
		}
		return needUpdate
	}
	if !equality.Semantic.DeepEqual(old.Status, incoming.Status) {
		return needReconcile
	}
	return unchanged
}

func sameDesired(a, b *v1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		sameUserAnnotations(a.Annotations, b.Annotations) &&
		equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) &&
		equality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}

// localAnnotation reports the annotations the merger itself stamps; they say
// nothing about what the source wants.
func localAnnotation(key string) bool {
	return key == pod.ConfigSourceAnnotationKey || key == pod.ConfigFirstSeenAnnotationKey
}

func sameUserAnnotations(a, b map[string]string) bool {
	n := 0
	for k, va := range a {
		if localAnnotation(k) {
			continue
		}
		if vb, ok := b[k]; !ok || va != vb {
			return false
		}
		n++
	}
	for k := range b {
		if !localAnnotation(k) {
			n--
		}
	}
	return n == 0
}

// sortPods orders pods by namespace, name and UID so that output built from
// map iteration is deterministic.
func sortPods(pods []*v1.Pod) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
}
