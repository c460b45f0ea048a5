package volumes

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func TestNeedsOwnership(t *testing.T) {
	gid := int64(2000)
	always := v1.FSGroupChangeAlways
	onMismatch := v1.FSGroupChangeOnRootMismatch
	dir := func(g uint32, perm uint32) rootInfo { return rootInfo{gid: g, mode: unix.S_IFDIR | perm, isDir: true} }
	for _, tc := range []struct {
		name     string
		fsGroup  *int64
		policy   *v1.PodFSGroupChangePolicy
		readOnly bool
		root     rootInfo
		want     bool
	}{
		{"no fsGroup", nil, &always, false, dir(0, 0o755), false},
		{"policy unset means Always", &gid, nil, false, dir(2000, 0o2770), true},
		{"Always, root matching", &gid, &always, false, dir(2000, 0o2770), true},
		{"OnRootMismatch, root matching", &gid, &onMismatch, false, dir(2000, 0o2770), false},
		{"OnRootMismatch, root matching with more bits", &gid, &onMismatch, false, dir(2000, 0o2777), false},
		{"OnRootMismatch, other group", &gid, &onMismatch, false, dir(0, 0o2770), true},
		{"OnRootMismatch, no setgid", &gid, &onMismatch, false, dir(2000, 0o770), true},
		{"OnRootMismatch, group not writable", &gid, &onMismatch, false, dir(2000, 0o2750), true},
		{"OnRootMismatch, read-only needs only r-x", &gid, &onMismatch, true, dir(2000, 0o2750), false},
		{"OnRootMismatch, root not a directory", &gid, &onMismatch, false, rootInfo{gid: 2000, mode: unix.S_IFREG | 0o2770}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsOwnership(tc.fsGroup, tc.policy, tc.readOnly, tc.root); got != tc.want {
				t.Errorf("needsOwnership = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOwnedMode(t *testing.T) {
	for _, tc := range []struct {
		mode      uint32
		isDir, ro bool
		want      uint32
	}{
		{0o600, false, false, 0o660},
		{0o755, true, false, 0o2775},
		{0o400, false, true, 0o440},
		{0o700, true, true, 0o2750},
		{0o4755, false, false, 0o4775},
	} {
		if got := ownedMode(tc.mode, tc.isDir, tc.ro); got != tc.want {
			t.Errorf("ownedMode(%o, dir=%v, ro=%v) = %o, want %o", tc.mode, tc.isDir, tc.ro, got, tc.want)
		}
	}
}

// TestSetOwnership re-owns a small tree and checks that a symlink planted
// in it (to a file outside) is not followed.
func TestSetOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	vol := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.WriteFile(outside, []byte("x"), 0o600))
	must(t, os.MkdirAll(filepath.Join(vol, "a/b"), 0o700))
	must(t, os.WriteFile(filepath.Join(vol, "a/b/f"), []byte("x"), 0o600))
	must(t, os.Symlink(outside, filepath.Join(vol, "a/link")))
	fd, err := unix.Open(vol, unix.O_PATH|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	must(t, setOwnership(fd, 2345, false))
	for p, want := range map[string]uint32{
		vol: 0o2775, "a": 0o2770, "a/b": 0o2770, "a/b/f": 0o660,
	} {
		if p != vol {
			p = filepath.Join(vol, p)
		}
		var st unix.Stat_t
		must(t, unix.Lstat(p, &st))
		if st.Gid != 2345 || st.Mode&0o7777 != want {
			t.Errorf("%s: gid %d mode %o, want 2345 %o", p, st.Gid, st.Mode&0o7777, want)
		}
	}
	var st unix.Stat_t
	must(t, unix.Stat(outside, &st))
	if st.Gid == 2345 || st.Mode&0o7777 != 0o600 {
		t.Errorf("the symlink's target was changed: gid %d mode %o", st.Gid, st.Mode&0o7777)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
