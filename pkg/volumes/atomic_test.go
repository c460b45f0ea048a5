package volumes

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		err := filepath.Walk(filepath.Join(dir, e.Name())+"/", func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			out[filepath.Clean(rel)] = string(b)
			return err
		})
		if err != nil {
			// A top-level file (a symlink to a file): Walk of "name/" fails.
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = string(b)
		}
	}
	return out
}

func hidden(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestAtomicWriteLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	v1 := map[string]File{
		"token":     {Data: []byte("t1"), Mode: 0o644},
		"ca.crt":    {Data: []byte("ca"), Mode: 0o644},
		"sub/inner": {Data: []byte("in"), Mode: 0o600},
	}
	changed, err := AtomicWrite(dir, v1, nil)
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	got := readVolume(t, dir)
	want := map[string]string{"token": "t1", "ca.crt": "ca", "sub/inner": "in"}
	if len(got) != len(want) {
		t.Fatalf("content = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// User-visible names are links into ..data, so readers resolve one version.
	if target, err := os.Readlink(filepath.Join(dir, "token")); err != nil || target != "..data/token" {
		t.Errorf("token link = %q, %v", target, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "sub/inner"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of sub/inner = %v, %v", fi.Mode(), err)
	}
	first := hidden(t, dir)
	if len(first) != 2 { // ..data + one version
		t.Fatalf("hidden entries = %v", first)
	}

	// The same content again: nothing is rewritten.
	if changed, err := AtomicWrite(dir, v1, nil); err != nil || changed {
		t.Fatalf("rewrite of same content: changed=%v err=%v", changed, err)
	}
	if h := hidden(t, dir); strings.Join(h, ",") != strings.Join(first, ",") {
		t.Errorf("same content made a new version: %v -> %v", first, h)
	}

	// A mode change alone is a change.
	v1["ca.crt"] = File{Data: []byte("ca"), Mode: 0o600}
	if changed, err := AtomicWrite(dir, v1, nil); err != nil || !changed {
		t.Fatalf("mode change: changed=%v err=%v", changed, err)
	}

	// New token, a file gone, a new file: the old version and the stale
	// name are removed.
	v2 := map[string]File{
		"token": {Data: []byte("t2"), Mode: 0o644},
		"ns":    {Data: []byte("default"), Mode: 0o644},
	}
	if changed, err := AtomicWrite(dir, v2, nil); err != nil || !changed {
		t.Fatalf("update: changed=%v err=%v", changed, err)
	}
	got = readVolume(t, dir)
	if len(got) != 2 || got["token"] != "t2" || got["ns"] != "default" {
		t.Errorf("after update: %v", got)
	}
	if h := hidden(t, dir); len(h) != 2 {
		t.Errorf("old versions left: %v", h)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("stale name sub still there: %v", err)
	}
}

func TestAtomicWriteRepairsLinks(t *testing.T) {
	dir := t.TempDir()
	files := map[string]File{"token": {Data: []byte("t"), Mode: 0o644}}
	if _, err := AtomicWrite(dir, files, nil); err != nil {
		t.Fatal(err)
	}
	// As if a crash came between the swap and the links.
	os.Remove(filepath.Join(dir, "token"))
	if err := os.Mkdir(filepath.Join(dir, "..stale_version"), 0o755); err != nil {
		t.Fatal(err)
	}
	if changed, err := AtomicWrite(dir, files, nil); err != nil || changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "token")); err != nil || string(b) != "t" {
		t.Errorf("token = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..stale_version")); !os.IsNotExist(err) {
		t.Errorf("stale version kept: %v", err)
	}
}

func TestAtomicWriteFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := t.TempDir()
	gid := int64(1234)
	files := map[string]File{"token": {Data: []byte("t"), Mode: 0o600}}
	if _, err := AtomicWrite(dir, files, &gid); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 || fileGID(fi) != gid {
		t.Errorf("token mode %v gid %d, want 0640 and %d", fi.Mode().Perm(), fileGID(fi), gid)
	}
	if changed, err := AtomicWrite(dir, files, &gid); err != nil || changed {
		t.Errorf("same content with fsGroup rewritten: changed=%v err=%v", changed, err)
	}
}

func TestAtomicWriteRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "../up", "a/../../b", "..data", "a/..x", "a//b", "./a"} {
		_, err := AtomicWrite(t.TempDir(), map[string]File{p: {Data: []byte("x")}}, nil)
		if err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	_, err := AtomicWrite(t.TempDir(), map[string]File{"a": {}, "a/b": {}}, nil)
	if err == nil {
		t.Error("a file that is also a directory accepted")
	}
}
