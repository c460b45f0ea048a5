package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMounts makes RemoveAll see mounts (given relative to dir) without
// mounting anything, so the tests run unprivileged.
func fakeMounts(t *testing.T, dir string, rel ...string) {
	t.Helper()
	orig := readMounts
	t.Cleanup(func() { readMounts = orig })
	readMounts = func(string) ([]Mount, error) {
		var out []Mount
		for _, r := range rel {
			out = append(out, Mount{Point: filepath.Join(dir, r), FSType: "ext4", Source: "/dev/fake"})
		}
		return out, nil
	}
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func realTemp(t *testing.T) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRemoveAllPlainTree(t *testing.T) {
	base := realTemp(t)
	dir := filepath.Join(base, "pods", "u1")
	fakeMounts(t, dir)
	write(t, filepath.Join(dir, "volumes", "kubernetes.io~empty-dir", "cache", "a", "b", "f"))
	write(t, filepath.Join(dir, "etc-hosts"))
	if err := os.Chmod(filepath.Join(dir, "etc-hosts"), 0); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAll(dir); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if exists(dir) {
		t.Errorf("%s still exists", dir)
	}
	if err := RemoveAll(dir); err != nil {
		t.Errorf("RemoveAll of a missing dir: %v", err)
	}
}

func TestRemoveAllDoesNotFollowSymlinks(t *testing.T) {
	base := realTemp(t)
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "keep"))
	dir := filepath.Join(base, "pods", "u1")
	fakeMounts(t, dir)
	ed := filepath.Join(dir, "volumes", "kubernetes.io~empty-dir", "v")
	if err := os.MkdirAll(ed, 0o755); err != nil {
		t.Fatal(err)
	}
	// What a container plants in an emptyDir: links to the node's files.
	for name, target := range map[string]string{"root": "/", "out": outside, "file": filepath.Join(outside, "keep")} {
		if err := os.Symlink(target, filepath.Join(ed, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveAll(dir); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if !exists(filepath.Join(outside, "keep")) {
		t.Fatal("a file reached through a symlink was removed")
	}
	if exists(dir) {
		t.Errorf("%s still exists", dir)
	}
}

func TestRemoveAllLeavesForeignMounts(t *testing.T) {
	base := realTemp(t)
	dir := filepath.Join(base, "pods", "u1")
	foreign := filepath.Join(dir, "volumes", "kubernetes.io~nfs", "data")
	fakeMounts(t, dir, "volumes/kubernetes.io~nfs/data")
	write(t, filepath.Join(foreign, "precious"))
	write(t, filepath.Join(dir, "volumes", "kubernetes.io~empty-dir", "v", "scratch"))

	err := RemoveAll(dir)
	if !errors.Is(err, ErrForeignMount) {
		t.Fatalf("RemoveAll = %v, want ErrForeignMount", err)
	}
	if !strings.Contains(err.Error(), foreign) {
		t.Errorf("error %q does not name the mount %s", err, foreign)
	}
	if !exists(filepath.Join(foreign, "precious")) {
		t.Fatal("content of a foreign mount was removed")
	}
	if exists(filepath.Join(dir, "volumes", "kubernetes.io~empty-dir")) {
		t.Error("the rest of the pod directory was not removed")
	}
}

func TestRemoveAllRefusesMountedPodDir(t *testing.T) {
	base := realTemp(t)
	dir := filepath.Join(base, "pods", "u1")
	fakeMounts(t, dir, ".")
	write(t, filepath.Join(dir, "precious"))
	if err := RemoveAll(dir); !errors.Is(err, ErrForeignMount) {
		t.Fatalf("RemoveAll = %v, want ErrForeignMount", err)
	}
	if !exists(filepath.Join(dir, "precious")) {
		t.Fatal("content of a mounted pod directory was removed")
	}
}

func TestRemoveAllThroughSymlinkedRoot(t *testing.T) {
	base := realTemp(t)
	real := filepath.Join(base, "real")
	write(t, filepath.Join(real, "pods", "u1", "f"))
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	fakeMounts(t, filepath.Join(real, "pods", "u1"))
	if err := RemoveAll(filepath.Join(link, "pods", "u1")); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if exists(filepath.Join(real, "pods", "u1")) {
		t.Error("pod directory behind a symlinked root dir was not removed")
	}
	if !exists(link) {
		t.Error("the root dir symlink was removed")
	}
}
