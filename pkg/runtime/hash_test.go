package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestHashContainerUpstreamValues: the hashes the upstream kubelet v1.37.2
// stamps (io.kubernetes.container.hash, hex) on containers of these specs,
// computed once with upstream's own HashContainer in a throwaway program
// outside this module. Equal values are what let nodelet adopt the upstream
// kubelet's containers without restarting them, and the reverse.
func TestHashContainerUpstreamValues(t *testing.T) {
	for _, tt := range []struct {
		c    v1.Container
		want uint64
	}{
		{v1.Container{Name: "app", Image: "docker.io/library/busybox:1.35"}, 0x5e1854d5},
		{v1.Container{Name: "web", Image: "nginx"}, 0x9690f4d},
		{v1.Container{Name: "etcd", Image: "registry.k8s.io/etcd:3.7.0-0"}, 0x464c5d1},
		{v1.Container{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.37.2"}, 0xbd8bd84c},
		{v1.Container{Name: "a", Image: "busybox:1.35"}, 0x324f4b18},
		{v1.Container{Name: "app", Image: "busybox:1.35"}, 0x13f6cc20},
		{v1.Container{}, 0xedd67cc4},
		// encoding/json escapes <, > and & as upstream's hash saw them.
		{v1.Container{Name: "x", Image: "a<b>&c"}, 0x8d3d6ea6},
		{v1.Container{Name: "unicode", Image: "reg/é:1"}, 0xf6812e7},
	} {
		if got := HashContainer(&tt.c); got != tt.want {
			t.Errorf("HashContainer(%q, %q) = %x, want upstream's %x", tt.c.Name, tt.c.Image, got, tt.want)
		}
	}
}

// TestHashContainerCoversNameAndImageOnly: a field other than name and
// image (a default a newer API server fills in, a command) keeps the hash,
// so it restarts nothing; the image or the name changes it.
func TestHashContainerCoversNameAndImageOnly(t *testing.T) {
	base := v1.Container{Name: "app", Image: "docker.io/library/busybox:1.35"}
	want := HashContainer(&base)
	if want != 0x5e1854d5 {
		t.Fatalf("base hash %x, want upstream's 5e1854d5", want)
	}
	always := v1.ContainerRestartPolicyAlways
	for name, mutate := range map[string]func(*v1.Container){
		"terminationMessagePolicy defaulted": func(c *v1.Container) { c.TerminationMessagePolicy = v1.TerminationMessageReadFile },
		"terminationMessagePath defaulted":   func(c *v1.Container) { c.TerminationMessagePath = "/dev/termination-log" },
		"imagePullPolicy defaulted":          func(c *v1.Container) { c.ImagePullPolicy = v1.PullIfNotPresent },
		"command":                            func(c *v1.Container) { c.Command = []string{"sleep", "3600"} },
		"env":                                func(c *v1.Container) { c.Env = []v1.EnvVar{{Name: "A", Value: "b"}} },
		"restartPolicy":                      func(c *v1.Container) { c.RestartPolicy = &always },
		"resources": func(c *v1.Container) {
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
		},
	} {
		c := base
		mutate(&c)
		if got := HashContainer(&c); got != want {
			t.Errorf("%s: hash %x, want it unchanged (%x)", name, got, want)
		}
	}
	for name, mutate := range map[string]func(*v1.Container){
		"image": func(c *v1.Container) { c.Image = "docker.io/library/busybox:1.36" },
		"name":  func(c *v1.Container) { c.Name = "app2" },
	} {
		c := base
		mutate(&c)
		if got := HashContainer(&c); got == want {
			t.Errorf("%s changed: hash %x unchanged", name, got)
		}
	}
}

// TestHashContainerSpec: the static pods' whole-spec hash sees every field.
func TestHashContainerSpec(t *testing.T) {
	base := v1.Container{Name: "app", Image: "busybox:1.35"}
	same := base
	if HashContainerSpec(&base) != HashContainerSpec(&same) {
		t.Fatal("equal specs hash differently")
	}
	edited := base
	edited.Args = []string{"x"}
	if HashContainerSpec(&base) == HashContainerSpec(&edited) {
		t.Error("args changed, whole-spec hash did not")
	}
}

func TestSpewBytes(t *testing.T) {
	// As k8s.io/utils/dump.ForHash prints []byte(`{"a":"b"}`).
	if got, want := string(spewBytes([]byte(`{"a":"b"}`))), "([]uint8)[123 34 97 34 58 34 98 34 125]"; got != want {
		t.Errorf("spewBytes = %q, want %q", got, want)
	}
}
