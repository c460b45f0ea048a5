package volumes

// AtomicWrite is hand-written on purpose: upstream's AtomicWriter is in
// k8s.io/kubernetes (pkg/volume/util), which nodelet must not import, and
// linking it would undo a small binary (nodelet links neither
// k8s.io/kubernetes nor client-go's full clientset, whose removal alone took
// the binary from 91 MB to 44 MB). Only its on-disk layout is kept.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// File is one file of a volume's content.
type File struct {
	Data []byte
	// Mode holds the permission bits.
	Mode os.FileMode
}

// The layout AtomicWrite keeps in a volume directory, the one upstream
// uses (tools that look at volumes know it):
//
//	..2026_01_02_15_04_05.123456789/   the current content, never modified
//	..data -> ..2026_01_02_15_04_05.123456789
//	token -> ..data/token              one link per top-level name
//
// A new version goes into a new hidden directory and becomes current by
// renaming a new ..data link over the old one, an atomic step: a reader
// that opens "token" resolves ..data once and so reads one version.
const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
	tsLayout    = "2006_01_02_15_04_05."
)

// File modes for an fsGroup, as upstream gives read-only volumes: the group
// may read files and enter directories, and new entries inherit the group.
const (
	groupFileBits = 0o440
	groupDirBits  = 0o550 | fs.ModeSetgid
)

// AtomicWrite makes dir (created if missing) hold exactly files, keyed by
// paths relative to dir, and reports whether anything changed: the same
// content is not rewritten, so calling it on every sync is cheap. With a
// non-nil fsGroup, files and directories belong to that group and are
// readable by it.
//
// Paths must be relative, clean, inside dir and may not start a component
// with ".." (reserved for the layout above).
func AtomicWrite(dir string, files map[string]File, fsGroup *int64) (bool, error) {
	if err := checkPaths(files); err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create volume directory: %w", err)
	}
	current, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataLink, err)
	}
	if current != "" {
		same, err := sameContent(filepath.Join(dir, current), files, fsGroup)
		if err != nil {
			return false, err
		}
		if same {
			// Still repair the names: a crash may have come between the
			// swap and the links.
			return false, finish(dir, current, files)
		}
	}

	version, err := writeVersion(dir, files, fsGroup)
	if err != nil {
		return false, err
	}
	// Swap: a new link renamed over the old is atomic; re-pointing one in
	// place is not.
	tmp := filepath.Join(dir, dataLinkTmp)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.Symlink(version, tmp); err != nil {
		return false, fmt.Errorf("link new content: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return false, fmt.Errorf("switch to new content: %w", err)
	}
	return true, finish(dir, version, files)
}

// finish links the top-level names of files into ..data, then removes
// what version does not use. Only after the swap may the old version and
// the names only it had go: a reader that resolved the old ..data a moment
// ago still finds its files until here.
func finish(dir, version string, files map[string]File) error {
	top := topLevel(files)
	for _, name := range top {
		if err := ensureLink(filepath.Join(dir, name), filepath.Join(dataLink, name)); err != nil {
			return err
		}
	}
	return prune(dir, version, top)
}

// checkPaths rejects paths that would leave the volume, clash with the
// layout, or be both a file and a directory.
func checkPaths(files map[string]File) error {
	for p := range files {
		if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) || filepath.Clean(p) != p {
			return fmt.Errorf("invalid path %q: must be relative and inside the volume", p)
		}
		for _, part := range strings.Split(p, string(filepath.Separator)) {
			if strings.HasPrefix(part, "..") {
				return fmt.Errorf("invalid path %q: components may not start with \"..\"", p)
			}
		}
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			if _, ok := files[d]; ok {
				return fmt.Errorf("path %q is both a file and a directory", d)
			}
		}
	}
	return nil
}

// fileMode is the mode a file is written with.
func fileMode(f File, fsGroup *int64) os.FileMode {
	m := f.Mode.Perm()
	if fsGroup != nil {
		m |= groupFileBits
	}
	return m
}

// sameContent reports whether version (a content directory) holds exactly
// files, with their modes and group.
func sameContent(version string, files map[string]File, fsGroup *int64) (bool, error) {
	seen := 0
	err := filepath.WalkDir(version, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(version, path)
		if err != nil {
			return err
		}
		f, ok := files[rel]
		if !ok || !d.Type().IsRegular() {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != fileMode(f, fsGroup) || (fsGroup != nil && fileGID(info) != *fsGroup) {
			return errDiffers
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, f.Data) {
			return errDiffers
		}
		seen++
		return nil
	})
	switch {
	case errors.Is(err, errDiffers):
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		// A dangling ..data (a crash mid-way): write afresh.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read current content: %w", err)
	}
	return seen == len(files), nil
}

var errDiffers = errors.New("content differs")

func fileGID(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Gid)
	}
	return -1
}

// writeVersion writes files into a new hidden directory of dir and returns
// its name.
func writeVersion(dir string, files map[string]File, fsGroup *int64) (name string, err error) {
	version, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format(tsLayout))
	if err != nil {
		return "", fmt.Errorf("create content directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(version)
		}
	}()
	if err := os.Chmod(version, 0o755); err != nil {
		return "", err
	}
	for _, p := range sortedKeys(files) {
		f := files[p]
		full := filepath.Join(version, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.Data, 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", p, err)
		}
		// Chmod after writing: the umask must not change the mode asked for.
		if err := os.Chmod(full, fileMode(f, fsGroup)); err != nil {
			return "", fmt.Errorf("write %s: %w", p, err)
		}
	}
	if fsGroup != nil {
		if err := setGroup(version, int(*fsGroup)); err != nil {
			return "", err
		}
	}
	return filepath.Base(version), nil
}

// setGroup gives everything under root to group gid, readable by it.
func setGroup(root string, gid int) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return fmt.Errorf("set group of %s: %w", path, err)
		}
		if !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(path, info.Mode()|groupDirBits)
	})
}

// ensureLink makes path a symlink to target.
func ensureLink(path, target string) error {
	if got, err := os.Readlink(path); err == nil && got == target {
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if err := os.Symlink(target, path); err != nil {
		return fmt.Errorf("link %s: %w", filepath.Base(path), err)
	}
	return nil
}

// prune removes from dir what the current version does not use: older
// content directories and top-level names that are no longer in it.
func prune(dir, version string, top []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if name == dataLink || name == version || slices.Contains(top, name) {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
	}
	return errors.Join(errs...)
}

// topLevel returns the sorted first components of the paths.
func topLevel(files map[string]File) []string {
	var top []string
	for p := range files {
		first, _, _ := strings.Cut(p, string(filepath.Separator))
		if !slices.Contains(top, first) {
			top = append(top, first)
		}
	}
	slices.Sort(top)
	return top
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
