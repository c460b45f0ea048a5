package images

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNormalizeRef(t *testing.T) {
	hex := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := map[string]string{
		"busybox":                          "docker.io/library/busybox:latest",
		"busybox:1.35":                     "docker.io/library/busybox:1.35",
		"library/busybox:1.35":             "docker.io/library/busybox:1.35",
		"foo/bar":                          "docker.io/foo/bar:latest",
		"docker.io/library/busybox:1.35":   "docker.io/library/busybox:1.35",
		"registry.k8s.io/pause:3.10":       "registry.k8s.io/pause:3.10",
		"localhost/x":                      "localhost/x:latest",
		"localhost:5000/x:1":               "localhost:5000/x:1",
		"busybox@sha256:" + hex:            "docker.io/library/busybox@sha256:" + hex,
		"sha256:" + hex:                    "sha256:" + hex,
		hex:                                "sha256:" + hex,
		"":                                 "",
		"quay.io/org/img:v1@sha256:" + hex: "quay.io/org/img@sha256:" + hex,
	}
	for in, want := range tests {
		if got := normalizeRef(in); got != want {
			t.Errorf("normalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	images := []*runtimeapi.Image{
		{Id: "sha256:busy", RepoTags: []string{"docker.io/library/busybox:1.35"}, Size: 10},
		{Id: "sha256:pause", RepoTags: []string{"registry.k8s.io/pause:3.10"}, Size: 1},
		{Id: "sha256:app", RepoTags: []string{"example.com/app:1"}, RepoDigests: []string{"example.com/app@sha256:d1"}, Size: 10},
		{Id: "sha256:pinned", RepoTags: []string{"example.com/pinned:1"}, Pinned: true},
		{Id: "sha256:wanted", RepoTags: []string{"docker.io/library/nginx:1"}},
		{Id: "sha256:free", RepoTags: []string{"docker.io/library/free:1"}},
		{Id: "sha256:exited", RepoTags: []string{"docker.io/library/exited:1"}},
	}
	containers := []*runtimeapi.Container{
		// containerd: ImageRef is the image ID, Image what the pod asked for.
		{Id: "c1", ImageRef: "sha256:busy", Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		// Only a digest reference.
		{Id: "c2", ImageRef: "example.com/app@sha256:d1", State: runtimeapi.ContainerState_CONTAINER_CREATED},
		// Exited containers still hold their image.
		{Id: "c3", Image: &runtimeapi.ImageSpec{Image: "exited:1"}, State: runtimeapi.ContainerState_CONTAINER_EXITED},
		// An image that is gone does not confuse anything.
		{Id: "c4", ImageRef: "sha256:gone"},
	}
	d := detect(images, containers, []string{"nginx:1", "not-present:1"}, "registry.k8s.io/pause:3.10")
	for id, want := range map[string]bool{"sha256:busy": true, "sha256:app": true, "sha256:exited": true, "sha256:wanted": true, "sha256:free": false, "sha256:pause": false, "sha256:pinned": false} {
		if d.inUse[id] != want {
			t.Errorf("inUse[%s] = %v, want %v", id, d.inUse[id], want)
		}
	}
	for id, want := range map[string]bool{"sha256:pause": true, "sha256:pinned": true, "sha256:free": false} {
		if d.pinned[id] != want {
			t.Errorf("pinned[%s] = %v, want %v", id, d.pinned[id], want)
		}
	}
	// A bare sandbox image name pins too.
	d = detect(images, nil, nil, "example.com/app:1")
	if !d.pinned["sha256:app"] {
		t.Errorf("sandbox image by tag not pinned")
	}
}
