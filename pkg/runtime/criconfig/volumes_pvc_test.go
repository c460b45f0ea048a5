package criconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A persistentVolumeClaim volume lives at its bind mount under the pod's
// local-volume directory, and a read-only claim is mounted read-only into
// every container, whatever the volume mount says.
func TestPersistentVolumeClaimMount(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "u1"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "rw", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "a"}}},
				{Name: "ro", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "b", ReadOnly: true}}},
			},
			Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "rw", MountPath: "/rw"}, {Name: "ro", MountPath: "/ro"}}}},
		},
	}
	opts := ConfigOptions{RootDir: "/var/lib/nodelet"}
	paths, err := VolumePaths(pod, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/var/lib/nodelet/pods/u1/volumes/kubernetes.io~local-volume/rw"; paths["rw"] != want {
		t.Errorf("path = %q, want %q", paths["rw"], want)
	}
	mounts, _, err := containerMounts(pod, &pod.Spec.Containers[0], opts, paths, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if mounts[0].Readonly || !mounts[1].Readonly {
		t.Errorf("readonly: rw %v, ro %v; want false, true", mounts[0].Readonly, mounts[1].Readonly)
	}
	if _, err := VolumeHostPath(pod, &pod.Spec.Volumes[0], ConfigOptions{}); err == nil {
		t.Error("no error without a root dir")
	}
}
