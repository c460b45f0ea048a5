package volumes

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/nodelet/nodelet/pkg/kube"
)

// ClaimReader reads what a persistentVolumeClaim volume names: the claim,
// the PersistentVolume bound to it, and this node (whose labels the
// volume's node affinity must match). Reads go to the API server with the
// node's credentials: the Node authorizer lets a node read a claim and its
// volume only for a pod bound to it that uses the claim.
type ClaimReader interface {
	Claim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	Volume(ctx context.Context, name string) (*v1.PersistentVolume, error)
	Node(ctx context.Context) (*v1.Node, error)
}

// ClaimsFromAPI returns a ClaimReader over client for the node nodeName.
func ClaimsFromAPI(client kube.Interface, nodeName string) ClaimReader {
	return apiClaims{client: client, node: nodeName}
}

type apiClaims struct {
	client kube.Interface
	node   string
}

func (c apiClaims) Claim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return c.client.PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c apiClaims) Volume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return c.client.PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

func (c apiClaims) Node(ctx context.Context) (*v1.Node, error) {
	return c.client.Nodes().Get(ctx, c.node, metav1.GetOptions{})
}

// pvcProtectionFinalizer keeps a claim in use from being deleted; a claim
// being deleted without it must not be started on (upstream's rule).
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// ErrClaimNotReady marks a claim that cannot be used yet (missing, pending,
// lost, its volume not bound back to it): the pod waits and is retried.
var ErrClaimNotReady = errors.New("claim not ready")

// notReady is a claim error that is ErrClaimNotReady, worded as upstream.
type notReady struct{ error }

func (e notReady) Unwrap() error        { return e.error }
func (e notReady) Is(target error) bool { return target == ErrClaimNotReady }

// resolveClaim returns the PersistentVolume bound to the claim of the
// persistentVolumeClaim volume v of pod. Its errors are the upstream
// volume manager's ("error processing PVC ns/name: PVC is not bound") and
// wrap ErrClaimNotReady.
func resolveClaim(ctx context.Context, r ClaimReader, pod *v1.Pod, claimName string) (*v1.PersistentVolume, error) {
	fail := func(err error) error {
		return notReady{fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claimName, err)}
	}
	pvc, err := r.Claim(ctx, pod.Namespace, claimName)
	if err != nil || pvc == nil {
		return nil, fail(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	}
	if err := checkClaim(pvc); err != nil {
		return nil, fail(err)
	}
	pv, err := r.Volume(ctx, pvc.Spec.VolumeName)
	if err != nil || pv == nil {
		return nil, fail(fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err))
	}
	if err := checkBinding(pvc, pv); err != nil {
		return nil, fail(err)
	}
	return pv, nil
}

// checkClaim fails for a claim a pod may not use (yet): being deleted
// without the protection finalizer, not Bound, or bound to no volume.
// The messages are upstream's.
func checkClaim(pvc *v1.PersistentVolumeClaim) error {
	switch {
	case pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer):
		return errors.New("PVC is being deleted")
	case pvc.Status.Phase != v1.ClaimBound:
		return errors.New("PVC is not bound")
	case pvc.Spec.VolumeName == "":
		return errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	return nil
}

// checkBinding fails unless pv is bound back to pvc: its claimRef names the
// claim's namespace, name and UID. A volume bound to another claim (or to
// an earlier claim of the same name) is not this claim's.
func checkBinding(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	ref := pv.Spec.ClaimRef
	switch {
	case ref == nil:
		return fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name)
	case ref.UID != pvc.UID:
		return fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pv.Name, ref.UID, pvc.UID)
	case ref.Namespace != pvc.Namespace || ref.Name != pvc.Name:
		return fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef %s/%s does not point to claim %s/%s", pv.Name, ref.Namespace, ref.Name, pvc.Namespace, pvc.Name)
	}
	return nil
}

// pvSource is what of a PersistentVolume nodelet mounts: the node path of
// a local or hostPath volume.
type pvSource struct {
	// local: a local PV (node affinity required, no type check);
	// otherwise a hostPath PV.
	local    bool
	path     string
	hostType v1.HostPathType
}

// volumeGIDAnnotation names a group the pods using a PV must have.
const volumeGIDAnnotation = "pv.beta.kubernetes.io/gid"

// ErrVolumeUnsupported marks a PersistentVolume nodelet does not mount:
// a type other than local or hostPath, or a raw block volume.
var ErrVolumeUnsupported = errors.New("not supported by nodelet")

// sourceOf returns what to mount of pv, or an error naming its type when
// nodelet does not mount it. No I/O.
func sourceOf(pv *v1.PersistentVolume) (pvSource, error) {
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return pvSource{}, fmt.Errorf("persistent volume %q has volumeMode Block: raw block volumes are %w", pv.Name, ErrVolumeUnsupported)
	}
	if gid, ok := pv.Annotations[volumeGIDAnnotation]; ok {
		// Upstream adds it to every container's supplemental groups;
		// nodelet does not yet, and does not start the pod without it.
		return pvSource{}, fmt.Errorf("persistent volume %q has annotation %s=%q: adding the volume's group to the containers' supplemental groups is %w", pv.Name, volumeGIDAnnotation, gid, ErrVolumeUnsupported)
	}
	switch src := pv.Spec.PersistentVolumeSource; {
	case src.Local != nil:
		if src.Local.FSType != nil && *src.Local.FSType != "" {
			return pvSource{}, fmt.Errorf("persistent volume %q: local volume with fsType %q (a block device to format and mount) is %w; use a directory", pv.Name, *src.Local.FSType, ErrVolumeUnsupported)
		}
		return pvSource{local: true, path: src.Local.Path}, nil
	case src.HostPath != nil:
		t := v1.HostPathUnset
		if src.HostPath.Type != nil {
			t = *src.HostPath.Type
		}
		return pvSource{path: src.HostPath.Path, hostType: t}, nil
	}
	return pvSource{}, fmt.Errorf("persistent volume %q is of type %s: %w (nodelet mounts local and hostPath persistent volumes only)", pv.Name, pvType(pv), ErrVolumeUnsupported)
}

// pvType names the source of a PV as the API spells it ("csi", "nfs"...).
func pvType(pv *v1.PersistentVolume) string {
	rv := reflect.ValueOf(pv.Spec.PersistentVolumeSource)
	rt := rv.Type()
	for i := range rt.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "unknown"
}

// checkNodeAffinity fails unless node matches the PV's required node
// affinity (a volume without one matches every node, as upstream).
func checkNodeAffinity(pv *v1.PersistentVolume, node *v1.Node) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	ok, err := corev1helpers.MatchNodeSelectorTerms(node, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return fmt.Errorf("persistent volume %q node affinity: %w", pv.Name, err)
	}
	if !ok {
		return fmt.Errorf("persistent volume %q node affinity does not match node %q: no matching NodeSelectorTerms", pv.Name, node.Name)
	}
	return nil
}
