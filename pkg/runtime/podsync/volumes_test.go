package podsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// fakeVolumes is a VolumeProvider that records what it is asked.
type fakeVolumes struct {
	checkErr   error
	prepareErr error
	prepared   []types.UID
	cleaned    []types.UID
}

func (f *fakeVolumes) Check(_ *v1.Pod, v *v1.Volume) error {
	if v.Projected == nil {
		return fmt.Errorf("volume type %s %w", criconfig.VolumeType(v), criconfig.ErrUnsupported)
	}
	return f.checkErr
}

func (f *fakeVolumes) Prepare(_ context.Context, pod *v1.Pod) error {
	f.prepared = append(f.prepared, pod.UID)
	return f.prepareErr
}

func (f *fakeVolumes) Cleanup(uid types.UID) { f.cleaned = append(f.cleaned, uid) }

func projectedPod() *v1.Pod {
	pod := testPod("a")
	pod.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	return pod
}

func TestSyncPodProvidedVolume(t *testing.T) {
	h := newHarness(t)
	vols := &fakeVolumes{}
	h.withVolumes(vols)
	pod := projectedPod()
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("SyncPod: %v", res.Err)
	}
	if len(vols.prepared) != 1 || vols.prepared[0] != pod.UID {
		t.Errorf("Prepare calls = %v", vols.prepared)
	}
	var mounts []string
	for _, c := range h.rt.containers {
		for _, m := range c.config.Mounts {
			mounts = append(mounts, fmt.Sprintf("%s->%s ro=%v", m.HostPath, m.ContainerPath, m.Readonly))
		}
	}
	// Read-only even though the mount does not say so: nodelet owns the content.
	want := h.s.opts.Config.RootDir + "/pods/uid-1/volumes/kubernetes.io~projected/kube-api-access-x->/var/run/secrets/kubernetes.io/serviceaccount ro=true"
	hosts := h.s.opts.Config.RootDir + "/pods/uid-1/etc-hosts->/etc/hosts ro=false"
	wantCalls(t, "mounts", mounts, []string{want, hosts})

	// Removing the pod tells the provider.
	ctx := context.Background()
	if err := h.s.KillPod(ctx, pod, h.rt.status(pod.UID), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.s.RemovePod(ctx, h.rt.status(pod.UID)); err != nil {
		t.Fatal(err)
	}
	if len(vols.cleaned) != 1 || vols.cleaned[0] != pod.UID {
		t.Errorf("Cleanup calls = %v", vols.cleaned)
	}
}

func TestSyncPodProvidedVolumeFailures(t *testing.T) {
	t.Run("unsupported: config error, no runtime calls", func(t *testing.T) {
		h := newHarness(t)
		h.withVolumes(&fakeVolumes{checkErr: fmt.Errorf("projected source clusterTrustBundle %w", criconfig.ErrUnsupported)})
		res := h.sync(projectedPod())
		want := `volume "kube-api-access-x": projected source clusterTrustBundle not supported yet`
		if res.Err == nil || !strings.Contains(res.Err.Error(), want) || !errors.Is(res.Err, ErrCreateContainerConfig) {
			t.Fatalf("Err = %v, want %q", res.Err, want)
		}
		if w := res.Waiting["a"]; w.Reason != ReasonCreateContainerConfigError {
			t.Errorf("waiting = %+v", w)
		}
		if _, rest := h.calls(); len(rest) != 0 {
			t.Errorf("runtime calls: %q", rest)
		}
	})
	t.Run("prepare fails: ContainerCreating and FailedMount", func(t *testing.T) {
		h := newHarness(t)
		h.withVolumes(&fakeVolumes{prepareErr: errors.New(`MountVolume.SetUp failed for volume "kube-api-access-x": configmaps "kube-root-ca.crt" not found`)})
		res := h.sync(projectedPod())
		if res.Err == nil || res.Waiting["a"].Reason != ReasonContainerCreating {
			t.Fatalf("Err = %v, waiting = %+v", res.Err, res.Waiting["a"])
		}
		found := false
		for _, e := range h.takeEvents() {
			found = found || strings.Contains(e, ReasonFailedMount) && strings.Contains(e, "kube-root-ca.crt")
		}
		if !found {
			t.Error("no FailedMount event")
		}
	})
	t.Run("standalone: unsupported with the reason", func(t *testing.T) {
		h := newHarness(t)
		res := h.sync(projectedPod())
		want := `volume "kube-api-access-x": volume type projected not supported yet (volumes with content from the API server need --kubeconfig)`
		if res.Err == nil || !strings.Contains(res.Err.Error(), want) || !errors.Is(res.Err, criconfig.ErrUnsupported) {
			t.Fatalf("Err = %v, want %q", res.Err, want)
		}
	})
	t.Run("other types still unsupported with a provider", func(t *testing.T) {
		h := newHarness(t)
		h.withVolumes(&fakeVolumes{})
		pod := testPod("a")
		pod.Spec.Volumes = []v1.Volume{{Name: "pvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		res := h.sync(pod)
		// A provider that reads no claims (volumes.ClaimContent) makes none.
		want := `volume "pvc": volume type persistentVolumeClaim not supported yet (persistentVolumeClaim volumes need --kubeconfig`
		if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
			t.Fatalf("Err = %v, want %q", res.Err, want)
		}
	})
}

func TestSyncPodKeepsVolumesOfAdoptedPod(t *testing.T) {
	h := newHarness(t)
	h.withVolumes(&fakeVolumes{})
	pod := projectedPod()
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	// nodelet restarts: a new Syncer (and provider) finds the pod running
	// with nothing to start, and still hands it to the provider.
	vols := &fakeVolumes{}
	opts := h.s.opts
	opts.Volumes = vols
	h.s = New(h.rt, h.events, opts)
	h.calls()
	if res := h.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if _, rest := h.calls(); len(rest) != 0 {
		t.Errorf("runtime calls for a running pod: %q", rest)
	}
	if len(vols.prepared) != 1 {
		t.Errorf("Prepare calls after restart = %v, want one", vols.prepared)
	}
	// A failure to keep them is the sync's error.
	vols.prepareErr = errors.New("API server down")
	if res := h.sync(pod); res.Err == nil {
		t.Error("Prepare failure of a running pod not reported")
	}
}

// withVolumes gives the harness's syncer a volume provider, as New would.
func (h *harness) withVolumes(v VolumeProvider) {
	h.s.opts.Volumes = v
	h.s.resources = resourceHooks(h.s.opts)
}
