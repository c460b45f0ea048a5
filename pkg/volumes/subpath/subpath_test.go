//go:build linux

package subpath

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// volumeWithTraps lays out a volume the way a hostile container would: the
// escapes of CVE-2017-1002101 next to innocent content.
func volumeWithTraps(t *testing.T) string {
	t.Helper()
	vol := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(vol, "data/deep"), 0o755))
	must(os.WriteFile(filepath.Join(vol, "data/file"), []byte("x"), 0o644))
	must(os.Symlink("/", filepath.Join(vol, "root")))
	must(os.Symlink("/etc", filepath.Join(vol, "etc")))
	must(os.Symlink("../../../../../../../../..", filepath.Join(vol, "data/up")))
	must(os.Symlink("..", filepath.Join(vol, "parent")))
	must(os.Symlink("data/deep", filepath.Join(vol, "inside")))
	must(os.Symlink("../../data", filepath.Join(vol, "data/deep/back")))
	must(os.Symlink(filepath.Join(vol, "data"), filepath.Join(vol, "absolute-inside")))
	must(os.Symlink("root/etc", filepath.Join(vol, "via")))
	return vol
}

func TestOpenBeneath(t *testing.T) {
	vol := volumeWithTraps(t)
	dirfd, err := unix.Open(vol, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)

	for _, tt := range []struct {
		path   string
		want   string // path opened, relative to vol; "" when refused
		escape bool
	}{
		{path: "data", want: "data"},
		{path: "data/file", want: "data/file"},
		{path: "inside", want: "data/deep"},
		{path: "inside/back/file", want: "data/file"},
		{path: "new/dir/made", want: "new/dir/made"},
		{path: "root", escape: true},
		{path: "root/etc", escape: true},
		{path: "etc", escape: true},
		{path: "etc/passwd", escape: true},
		{path: "data/up", escape: true},
		{path: "data/up/etc", escape: true},
		{path: "parent", escape: true},
		{path: "via", escape: true},
		// Absolute symlinks are refused even when they point inside: the
		// kernel cannot tell where an absolute target lies, and neither
		// can a container, whose "/" is elsewhere.
		{path: "absolute-inside", escape: true},
		// Nothing is created beyond an escaping component.
		{path: "root/tmp/nodelet-subpath-must-not-exist", escape: true},
	} {
		t.Run(tt.path, func(t *testing.T) {
			fd, err := openBeneath(dirfd, tt.path, 0o755)
			if tt.escape {
				if err == nil {
					unix.Close(fd)
					t.Fatalf("opened %q, want it refused", tt.path)
				}
				if !errors.Is(err, ErrEscapes) {
					t.Fatalf("err = %v, want ErrEscapes", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			got, err := os.Readlink("/proc/self/fd/" + itoa(fd))
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(vol, tt.want); got != want {
				t.Errorf("opened %s, want %s", got, want)
			}
		})
	}
	if _, err := os.Lstat("/tmp/nodelet-subpath-must-not-exist"); err == nil {
		t.Error("a directory was created outside the volume")
	}
	fi, err := os.Stat(filepath.Join(vol, "new/dir/made"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("created subPath: %v %v", fi, err)
	}
	// A missing subPath gets the volume's mode whatever the umask: an
	// fsGroup volume's g+rwx and setgid (conformance: "nonexistent volume
	// subPath should have the correct mode and owner using FSGroup").
	fd, err := openBeneath(dirfd, "wide/open", 0o2777)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	for _, p := range []string{"wide", "wide/open"} {
		fi, err := os.Stat(filepath.Join(vol, p))
		if err != nil || fi.Mode()&(os.ModePerm|os.ModeSetgid) != 0o777|os.ModeSetgid {
			t.Errorf("created %s: %v %v, want drwxrwxrwx with setgid", p, fi, err)
		}
	}
	// What existed keeps its mode.
	if fi, err := os.Stat(filepath.Join(vol, "data")); err != nil || fi.Mode().Perm() != 0o755&^umask() {
		t.Errorf("existing dir: %v %v", fi, err)
	}
}

func TestOpenNoFollowRefusesEverySymlink(t *testing.T) {
	vol := volumeWithTraps(t)
	dirfd, err := unix.Open(vol, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	if fd, err := openNoFollow(dirfd, "data/deep"); err != nil {
		t.Errorf("plain path: %v", err)
	} else {
		unix.Close(fd)
	}
	for _, p := range []string{"root", "inside", "data/up", "parent", "../x"} {
		if fd, err := openNoFollow(dirfd, p); err == nil {
			unix.Close(fd)
			t.Errorf("%s: opened, want refused", p)
		}
	}
}

func TestCheckRelative(t *testing.T) {
	for p, ok := range map[string]bool{
		"a": true, "a/b": true, "a/./b": true, "..a": true,
		"": false, "/a": false, "..": false, "a/../b": false, "a/..": false,
	} {
		if err := checkRelative(p); (err == nil) != ok {
			t.Errorf("checkRelative(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func umask() os.FileMode {
	m := unix.Umask(0)
	unix.Umask(m)
	return os.FileMode(m)
}
