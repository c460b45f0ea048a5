package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClaims serves claims, volumes and the node from maps.
type fakeClaims struct {
	pvcs map[string]*v1.PersistentVolumeClaim // namespace/name
	pvs  map[string]*v1.PersistentVolume
	node *v1.Node
}

func (f *fakeClaims) Claim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if c, ok := f.pvcs[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (f *fakeClaims) Volume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if pv, ok := f.pvs[name]; ok {
		return pv, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

func (f *fakeClaims) Node(context.Context) (*v1.Node, error) { return f.node, nil }

func boundClaim(ns, name, pv string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
}

func localPV(name, path string, claim *v1.PersistentVolumeClaim, hostname string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}
	if claim != nil {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	}
	return pv
}

func TestResolveClaim(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		claim  func() *v1.PersistentVolumeClaim
		pv     func(c *v1.PersistentVolumeClaim) *v1.PersistentVolume
		errHas string // "" ok
	}{
		{"bound", func() *v1.PersistentVolumeClaim { return boundClaim("ns", "c", "pv1") },
			func(c *v1.PersistentVolumeClaim) *v1.PersistentVolume { return localPV("pv1", "/x", c, "n") }, ""},
		{"missing claim", func() *v1.PersistentVolumeClaim { return nil }, nil,
			`error processing PVC ns/c: failed to fetch PVC from API server: persistentvolumeclaims "c" not found`},
		{"pending", func() *v1.PersistentVolumeClaim {
			c := boundClaim("ns", "c", "")
			c.Status.Phase = v1.ClaimPending
			return c
		}, nil, "error processing PVC ns/c: PVC is not bound"},
		{"lost", func() *v1.PersistentVolumeClaim {
			c := boundClaim("ns", "c", "pv1")
			c.Status.Phase = v1.ClaimLost
			return c
		}, nil, "PVC is not bound"},
		{"bound without a volume name", func() *v1.PersistentVolumeClaim { return boundClaim("ns", "c", "") }, nil,
			"PVC has empty pvc.Spec.VolumeName"},
		{"being deleted, unprotected", func() *v1.PersistentVolumeClaim {
			c := boundClaim("ns", "c", "pv1")
			c.DeletionTimestamp = &now
			return c
		}, nil, "PVC is being deleted"},
		{"being deleted, protected: still usable", func() *v1.PersistentVolumeClaim {
			c := boundClaim("ns", "c", "pv1")
			c.DeletionTimestamp = &now
			c.Finalizers = []string{pvcProtectionFinalizer}
			return c
		}, func(c *v1.PersistentVolumeClaim) *v1.PersistentVolume { return localPV("pv1", "/x", c, "n") }, ""},
		{"volume missing", func() *v1.PersistentVolumeClaim { return boundClaim("ns", "c", "pv1") }, nil,
			`failed to fetch PV pv1 from API server: persistentvolumes "pv1" not found`},
		{"volume not bound back", func() *v1.PersistentVolumeClaim { return boundClaim("ns", "c", "pv1") },
			func(*v1.PersistentVolumeClaim) *v1.PersistentVolume { return localPV("pv1", "/x", nil, "n") },
			"found PV object pv1 but it has a nil pv.Spec.ClaimRef"},
		{"volume bound to an earlier claim of that name", func() *v1.PersistentVolumeClaim { return boundClaim("ns", "c", "pv1") },
			func(c *v1.PersistentVolumeClaim) *v1.PersistentVolume {
				pv := localPV("pv1", "/x", c, "n")
				pv.Spec.ClaimRef.UID = "old"
				return pv
			}, "does not point to claim.UID uid-c"},
		{"volume bound to another claim with that UID", func() *v1.PersistentVolumeClaim { return boundClaim("ns", "c", "pv1") },
			func(c *v1.PersistentVolumeClaim) *v1.PersistentVolume {
				pv := localPV("pv1", "/x", c, "n")
				pv.Spec.ClaimRef.Namespace = "other"
				return pv
			}, "does not point to claim ns/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClaims{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
			c := tc.claim()
			if c != nil {
				f.pvcs["ns/c"] = c
				if tc.pv != nil {
					pv := tc.pv(c)
					f.pvs[pv.Name] = pv
				}
			}
			pv, err := resolveClaim(context.Background(), f, pod, "c")
			if tc.errHas == "" {
				if err != nil || pv == nil || pv.Name != "pv1" {
					t.Fatalf("resolveClaim = %v, %v", pv, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || !errors.Is(err, ErrClaimNotReady) {
				t.Fatalf("err = %v, want it to contain %q and be ErrClaimNotReady", err, tc.errHas)
			}
		})
	}
}

func TestSourceOf(t *testing.T) {
	block := v1.PersistentVolumeBlock
	ext4 := "ext4"
	dir := v1.HostPathDirectory
	for _, tc := range []struct {
		name   string
		src    v1.PersistentVolumeSource
		mode   *v1.PersistentVolumeMode
		gid    string
		want   pvSource
		errHas string
	}{
		{"local", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/a"}}, nil, "", pvSource{local: true, path: "/mnt/a"}, ""},
		{"hostPath", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/h", Type: &dir}}, nil, "", pvSource{path: "/h", hostType: dir}, ""},
		{"hostPath untyped", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/h"}}, nil, "", pvSource{path: "/h", hostType: v1.HostPathUnset}, ""},
		{"csi refused by name", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d"}}, nil, "", pvSource{}, `is of type csi: not supported by nodelet`},
		{"nfs refused by name", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s"}}, nil, "", pvSource{}, `is of type nfs`},
		{"iscsi refused by name", v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{}}, nil, "", pvSource{}, `is of type iscsi`},
		{"block mode refused", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/dev/sdb"}}, &block, "", pvSource{}, "volumeMode Block"},
		{"volume gid annotation refused", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/a"}}, nil, "1234", pvSource{}, "pv.beta.kubernetes.io/gid"},
		{"local with fsType refused", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/dev/sdb", FSType: &ext4}}, nil, "", pvSource{}, `fsType "ext4"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: tc.src, VolumeMode: tc.mode}}
			if tc.gid != "" {
				pv.Annotations = map[string]string{volumeGIDAnnotation: tc.gid}
			}
			got, err := sourceOf(pv)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !errors.Is(err, ErrVolumeUnsupported) {
					t.Fatalf("err = %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("sourceOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCheckNodeAffinity(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	noAffinity := localPV("pv", "/x", nil, "n1")
	noAffinity.Spec.NodeAffinity = nil
	byField := localPV("pv", "/x", nil, "n1")
	byField.Spec.NodeAffinity.Required.NodeSelectorTerms = []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}}
	for _, tc := range []struct {
		name string
		pv   *v1.PersistentVolume
		ok   bool
	}{
		{"this node", localPV("pv", "/x", nil, "n1"), true},
		{"another node", localPV("pv", "/x", nil, "n2"), false},
		{"no affinity", noAffinity, true},
		{"by metadata.name", byField, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNodeAffinity(tc.pv, node)
			if (err == nil) != tc.ok {
				t.Fatalf("checkNodeAffinity = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), `does not match node "n1"`) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestCheckResolved(t *testing.T) {
	for _, tc := range []struct {
		real string
		ok   bool
	}{
		{"/mnt/disks/a", true},
		{"/", false},
		{"/var/lib/nodelet", false},
		{"/var/lib/nodelet/pods/u/volumes/kubernetes.io~empty-dir/x", false},
		{"/var/lib/nodelet-data", true},
	} {
		if err := checkResolved("/p", tc.real, "/var/lib/nodelet"); (err == nil) != tc.ok {
			t.Errorf("checkResolved(%q) = %v, want ok=%v", tc.real, err, tc.ok)
		}
	}
}

// TestClaimPluginSetUp runs the plugin with the bind mount replaced: the
// claim is resolved, the path checked, and the bind asked for read-only
// as the claim says; refusals name their cause.
func TestClaimPluginSetUp(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	intoRoot := filepath.Join(t.TempDir(), "into-root")
	if err := os.Symlink(root, intoRoot); err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	claim := boundClaim("ns", "c", "pv1")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	for _, tc := range []struct {
		name     string
		pv       *v1.PersistentVolume
		readOnly bool
		errHas   string
	}{
		{"local", localPV("pv1", data, claim, "n1"), false, ""},
		{"local through a symlink", localPV("pv1", link, claim, "n1"), true, ""},
		{"local on another node", localPV("pv1", data, claim, "n2"), false, "MountVolume.NodeAffinity check failed"},
		{"local path missing", localPV("pv1", data+"-gone", claim, "n1"), false, "no such file or directory"},
		{"local path into nodelet's root", localPV("pv1", intoRoot, claim, "n1"), false, "inside nodelet's root directory"},
		{"hostPath", func() *v1.PersistentVolume {
			pv := localPV("pv1", "", claim, "n1")
			pv.Spec.Local = nil
			pv.Spec.HostPath = &v1.HostPathVolumeSource{Path: data}
			return pv
		}(), true, ""},
		{"hostPath of the wrong type", func() *v1.PersistentVolume {
			pv := localPV("pv1", "", claim, "n1")
			pv.Spec.Local = nil
			f := v1.HostPathFile
			pv.Spec.HostPath = &v1.HostPathVolumeSource{Path: data, Type: &f}
			return pv
		}(), false, "is not of type File"},
		{"nfs", func() *v1.PersistentVolume {
			pv := localPV("pv1", "", claim, "n1")
			pv.Spec.Local = nil
			pv.Spec.NFS = &v1.NFSVolumeSource{Server: "s", Path: "/e"}
			return pv
		}(), false, `persistent volume "pv1" is of type nfs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClaims{pvcs: map[string]*v1.PersistentVolumeClaim{"ns/c": claim}, pvs: map[string]*v1.PersistentVolume{"pv1": tc.pv}, node: node}
			var bound []bool
			p := newClaimPlugin(root, f)
			p.bind = func(_ int, _ string, ro bool) error {
				bound = append(bound, ro)
				return nil
			}
			v := &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: tc.readOnly}}}
			err := p.SetUp(context.Background(), pod, v, filepath.Join(root, "target"))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || len(bound) != 0 {
					t.Fatalf("SetUp = %v (bound %v), want %q", err, bound, tc.errHas)
				}
				if !strings.Contains(err.Error(), `MountVolume.SetUp failed for volume "data"`) {
					t.Errorf("err = %v, does not name the volume", err)
				}
				return
			}
			if err != nil || len(bound) != 1 || bound[0] != tc.readOnly {
				t.Fatalf("SetUp = %v, bound %v, want one bind readOnly=%v", err, bound, tc.readOnly)
			}
		})
	}
	t.Run("pending claim waits with upstream's message", func(t *testing.T) {
		pending := boundClaim("ns", "c", "")
		pending.Status.Phase = v1.ClaimPending
		f := &fakeClaims{pvcs: map[string]*v1.PersistentVolumeClaim{"ns/c": pending}, node: node}
		p := newClaimPlugin(root, f)
		v := &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
		err := p.SetUp(context.Background(), pod, v, filepath.Join(root, "target"))
		want := "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC ns/c: PVC is not bound"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("SetUp = %v, want %q", err, want)
		}
	})
}
