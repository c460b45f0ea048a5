package volumes

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestSetEmptyDirMode(t *testing.T) {
	gid := int64(os.Getgid()) // a group this test may chown to without root
	for _, tc := range []struct {
		name    string
		fsGroup *int64
		sticky  bool // a tmpfs root (Memory emptyDir) is 1777
		want    uint32
	}{
		{name: "no fsGroup", want: 0o777},
		{name: "fsGroup", fsGroup: &gid, want: 0o777 | unix.S_ISGID},
		{name: "sticky tmpfs root keeps its sticky bit", sticky: true, want: 0o777 | unix.S_ISVTX},
		{name: "sticky tmpfs root with fsGroup", sticky: true, fsGroup: &gid, want: 0o777 | unix.S_ISGID | unix.S_ISVTX},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.sticky {
				if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
					t.Fatal(err)
				}
			}
			pod := &v1.Pod{}
			if tc.fsGroup != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To(*tc.fsGroup)}
			}
			for range 2 { // idempotent
				if err := setEmptyDirMode(dir, pod); err != nil {
					t.Fatal(err)
				}
			}
			var st unix.Stat_t
			if err := unix.Stat(dir, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode&0o7777 != tc.want || (tc.fsGroup != nil && int64(st.Gid) != *tc.fsGroup) {
				t.Fatalf("mode %o gid %d, want %o", st.Mode&0o7777, st.Gid, tc.want)
			}
		})
	}
	// A symlink in place of the volume directory is refused, not followed.
	dir := t.TempDir()
	link := filepath.Join(dir, "vol")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	if err := setEmptyDirMode(link, &v1.Pod{}); err == nil {
		t.Fatal("symlink accepted")
	}
}
