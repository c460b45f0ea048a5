package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzAtomicWrite writes volume content whose paths come from the API (a
// config map's keys, a secret's items, a downward API file's path) twice
// over, the second time with other paths: either error or the content
// lands, and never is anything created outside the volume directory.
//
//	go test ./pkg/volumes -run '^$' -fuzz FuzzAtomicWrite -fuzztime 60s
func FuzzAtomicWrite(f *testing.F) {
	for _, s := range [][2]string{
		{"key\x00dir/file", "key"},
		{"../escape\x00a", "a/b/c"},
		{"..data\x00..2026_01_02", "/abs\x00./dot"},
		{"a\x00a/b", "a//b\x00a/./b"},
		{"token", "token\x00..data_tmp\x00x/..y"},
		{"\x00", "ünï\x00sp ace\x00new\nline"},
	} {
		f.Add(s[0], s[1], []byte("data"), true)
	}
	f.Fuzz(func(t *testing.T, first, second string, data []byte, group bool) {
		root := t.TempDir()
		dir := filepath.Join(root, "volume")
		var fsGroup *int64
		// Group-only directories (0550) would keep a non-root user from
		// removing the test's temporary dir.
		if group && os.Geteuid() == 0 {
			gid := int64(os.Getgid())
			fsGroup = &gid
		}
		for _, set := range []string{first, second} {
			files := map[string]File{}
			for _, p := range strings.Split(set, "\x00") {
				files[p] = File{Data: data, Mode: 0o644}
			}
			if _, err := AtomicWrite(dir, files, fsGroup); err != nil {
				if err.Error() == "" {
					t.Fatal("empty error message")
				}
				continue
			}
			for p, want := range files {
				got, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil || string(got) != string(want.Data) {
					t.Fatalf("after a successful write of %q: %q, %v", p, got, err)
				}
			}
		}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != root && path != dir && !strings.HasPrefix(path, dir+string(filepath.Separator)) {
				t.Errorf("%s created outside the volume", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
