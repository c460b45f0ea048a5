//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
)

// TestClusterPersistentVolumeClaims runs pods with persistentVolumeClaim
// volumes on nodelet against a real API server and containerd. The harness
// has no controller-manager, so the test binds claims and volumes itself as
// the PV controller would (PV claimRef, claim volumeName, both statuses
// Bound through the status subresource).
func TestClusterPersistentVolumeClaims(t *testing.T) {
	cluster := framework.StartCluster(t, framework.NodeName)
	rt := framework.StartRuntime(t)
	admin := cpClient(t, cluster.AdminKubeconfig)
	framework.StartNodelet(t, rt, "--kubeconfig", cluster.NodeKubeconfig)
	cpWaitNode(t, admin)
	ctx := context.Background()
	disks := t.TempDir()

	t.Run("LocalVolumeDataSurvivesPodRecreation", func(t *testing.T) {
		dir := filepath.Join(disks, "local-a")
		must(t, os.Mkdir(dir, 0o755))
		// A local PV whose path is a symlink to its directory (upstream's
		// "dir-link" local volume type).
		link := filepath.Join(disks, "local-a-link")
		must(t, os.Symlink(dir, link))
		pvcBind(t, admin, "data-a", "pv-a", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: link}}, true)

		pvcPod(t, admin, "writer", "data-a", false, nil, "echo hello > /data/f")
		pvcWaitPhase(t, admin, "writer", v1.PodSucceeded)
		if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "hello\n" {
			t.Fatalf("file on the local PV: %q, %v", b, err)
		}
		pvcDelete(t, admin, "writer")

		// fsGroup: the existing content is re-owned when the volume is mounted.
		pvcPod(t, admin, "reader", "data-a", false, ptr.To[int64](2345), "grep hello /data/f")
		pvcWaitPhase(t, admin, "reader", v1.PodSucceeded)
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(dir, "f"), &st))
		if st.Gid != 2345 || st.Mode&0o060 != 0o060 {
			t.Errorf("after fsGroup 2345: file gid %d mode %o, want gid 2345 and group rw", st.Gid, st.Mode&0o777)
		}
		pvcDelete(t, admin, "reader")

		// subPath over the claim: bound beneath the volume like any other.
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "sub", Namespace: "default"},
			Spec: v1.PodSpec{
				NodeName: framework.NodeName, RestartPolicy: v1.RestartPolicyNever,
				AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []v1.Container{{Name: "c", Image: "busybox:1.35", Command: []string{"sh", "-c", "echo sub > /sub/g"},
					VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/sub", SubPath: "nested/dir"}}}},
				Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
					PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-a"}}}},
			},
		}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvcWaitPhase(t, admin, "sub", v1.PodSucceeded)
		if b, err := os.ReadFile(filepath.Join(dir, "nested/dir/g")); err != nil || string(b) != "sub\n" {
			t.Errorf("subPath file on the local PV: %q, %v", b, err)
		}
		pvcDelete(t, admin, "sub")
	})

	t.Run("UnboundClaimWaitsThenStarts", func(t *testing.T) {
		dir := filepath.Join(disks, "local-late")
		must(t, os.Mkdir(dir, 0o755))
		claim := &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default"},
			Spec: v1.PersistentVolumeClaimSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if _, err := admin.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvcPod(t, admin, "waiter", "late", false, nil, "touch /data/started")
		var msg string
		poll.Until(t, 60*time.Second, 250*time.Millisecond, "FailedMount event for the pending claim", func() (bool, string) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=waiter,reason=FailedMount"})
			if err != nil || len(evs.Items) == 0 {
				return false, fmt.Sprint(err)
			}
			msg = evs.Items[0].Message
			return true, ""
		})
		if !strings.HasPrefix(msg, "Unable to attach or mount volumes: ") || !strings.HasSuffix(msg, "error processing PVC default/late: PVC is not bound") {
			t.Errorf("FailedMount message %q does not give the cause", msg)
		}
		p, err := admin.CoreV1().Pods("default").Get(ctx, "waiter", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("waiting pod's container status: %+v", p.Status.ContainerStatuses)
		}
		t.Logf("FailedMount: %s", msg)
		pvcBind(t, admin, "late", "pv-late", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dir}}, true)
		pvcWaitPhase(t, admin, "waiter", v1.PodSucceeded)
		if _, err := os.Stat(filepath.Join(dir, "started")); err != nil {
			t.Errorf("the pod did not write to the claim's volume: %v", err)
		}
		pvcDelete(t, admin, "waiter")
	})

	t.Run("ReadOnlyHostPathVolume", func(t *testing.T) {
		dir := filepath.Join(disks, "host-ro")
		must(t, os.Mkdir(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "seed"), []byte("seed\n"), 0o644))
		pvcBind(t, admin, "ro", "pv-ro", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: ptr.To(v1.HostPathDirectory)}}, false)
		pvcPod(t, admin, "ro-reader", "ro", true, nil, "grep seed /data/seed && ! touch /data/probe")
		pvcWaitPhase(t, admin, "ro-reader", v1.PodSucceeded)
		if _, err := os.Stat(filepath.Join(dir, "probe")); err == nil {
			t.Error("a read-only claim was written")
		}
		pvcDelete(t, admin, "ro-reader")
	})

	t.Run("OtherNodesLocalVolumeRefused", func(t *testing.T) {
		dir := filepath.Join(disks, "elsewhere")
		must(t, os.Mkdir(dir, 0o755))
		pvcBindNode(t, admin, "other", "pv-other", dir, "some-other-node")
		pvcPod(t, admin, "misplaced", "other", false, nil, "true")
		poll.Until(t, 60*time.Second, 250*time.Millisecond, "FailedMount naming the node affinity", func() (bool, string) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=misplaced,reason=FailedMount"})
			if err != nil || len(evs.Items) == 0 {
				return false, fmt.Sprint(err)
			}
			return strings.Contains(evs.Items[0].Message, "NodeAffinity check failed"), evs.Items[0].Message
		})
		pvcDelete(t, admin, "misplaced")
	})

	t.Run("VolumesUnmountedWhenPodsStop", func(t *testing.T) {
		poll.Until(t, 60*time.Second, 250*time.Millisecond, "no persistent volume bind mount left", func() (bool, string) {
			b, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "kubernetes.io~local-volume") {
					left = append(left, l)
				}
			}
			return len(left) == 0, strings.Join(left, "; ")
		})
	})

}

// pvcBind creates the claim (unless it exists) and the PV with src bound to
// each other, both Bound, as the PV controller would. A local PV gets node
// affinity to nodelet's node.
func pvcBind(t *testing.T, c kubernetes.Interface, claimName, pvName string, src v1.PersistentVolumeSource, affinity bool) *v1.PersistentVolume {
	t.Helper()
	var na *v1.VolumeNodeAffinity
	if affinity {
		na = nodeAffinity(framework.NodeName)
	}
	return pvcBindPV(t, c, claimName, pvName, src, na)
}

func pvcBindNode(t *testing.T, c kubernetes.Interface, claimName, pvName, dir, node string) {
	t.Helper()
	pvcBindPV(t, c, claimName, pvName, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dir}}, nodeAffinity(node))
}

func nodeAffinity(node string) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

func pvcBindPV(t *testing.T, c kubernetes.Interface, claimName, pvName string, src v1.PersistentVolumeSource, na *v1.VolumeNodeAffinity) *v1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	claims := c.CoreV1().PersistentVolumeClaims("default")
	size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	claim, err := claims.Get(ctx, claimName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		claim, err = claims.Create(ctx, &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: "default"},
			Spec: v1.PersistentVolumeClaimSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources:   v1.VolumeResourceRequirements{Requests: size},
				VolumeName:  pvName,
			},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	pv, err := c.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      size,
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        src,
			NodeAffinity:                  na,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claimName, UID: claim.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if claim.Spec.VolumeName == "" {
		claim.Spec.VolumeName = pvName
		if claim, err = claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim.Status.Phase = v1.ClaimBound
	claim.Status.AccessModes = claim.Spec.AccessModes
	claim.Status.Capacity = size
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pv
}

// pvcPod creates a run-once pod on nodelet's node running script with the
// claim mounted at /data.
func pvcPod(t *testing.T, c kubernetes.Interface, name, claim string, readOnly bool, fsGroup *int64, script string) {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      framework.NodeName,
			RestartPolicy:                 v1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               &v1.PodSecurityContext{FSGroup: fsGroup},
			Containers: []v1.Container{{
				Name: "c", Image: "busybox:1.35", Command: []string{"sh", "-c", script},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly},
			}}},
		},
	}
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

func pvcWaitPhase(t *testing.T, c kubernetes.Interface, name string, phase v1.PodPhase) {
	t.Helper()
	cpWaitPod(t, c, name, 120*time.Second, "phase "+string(phase), func(p *v1.Pod) bool {
		if p != nil && p.Status.Phase == v1.PodFailed && phase != v1.PodFailed {
			t.Fatalf("pod %s failed: %+v", name, p.Status)
		}
		return p != nil && p.Status.Phase == phase
	})
}

// pvcDelete deletes a pod and waits until nodelet removed it from the API.
func pvcDelete(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if err := c.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cpWaitPod(t, c, name, 60*time.Second, "gone", func(p *v1.Pod) bool { return p == nil })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
