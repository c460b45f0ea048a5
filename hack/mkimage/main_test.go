package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// readArchive returns every regular file of a tar by name.
func readArchive(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files := map[string][]byte{}
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, headers
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		headers[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("read %s: %v", h.Name, err)
			}
			files[h.Name] = b
		}
	}
}

func TestBuildWritesConsistentDockerArchive(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "bin", "busybox"), []byte("#!fake\n"), 0o755))
	must(t, os.Symlink("busybox", filepath.Join(root, "bin", "sh")))
	must(t, os.Link(filepath.Join(root, "bin", "busybox"), filepath.Join(root, "bin", "echo")))

	out := filepath.Join(dir, "img.tar")
	res, err := build(options{
		Out: out, Names: []string{"docker.io/library/test:1"}, Root: root,
		Cmd: []string{"sh"}, Env: []string{"FOO=bar", "PATH=/bin"}, Arch: "amd64",
		FillerBytes: 4096, FillerSeed: 7, FillerPath: "/data/filler",
	})
	if err != nil {
		t.Fatalf("build: %v", err)
	}

	f, err := os.Open(out)
	must(t, err)
	defer f.Close()
	files, _ := readArchive(t, f)

	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	must(t, json.Unmarshal(files["manifest.json"], &manifest))
	if len(manifest) != 1 || !reflect.DeepEqual(manifest[0].RepoTags, []string{"docker.io/library/test:1"}) {
		t.Fatalf("manifest = %+v", manifest)
	}
	layer := files[manifest[0].Layers[0]]
	sum := sha256.Sum256(layer)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != res.LayerDigest || int64(len(layer)) != res.LayerSize {
		t.Fatalf("layer digest/size %s/%d, result says %s/%d", got, len(layer), res.LayerDigest, res.LayerSize)
	}

	configBytes := files[manifest[0].Config]
	csum := sha256.Sum256(configBytes)
	if "sha256:"+hex.EncodeToString(csum[:]) != res.ConfigDigest {
		t.Fatalf("config digest mismatch")
	}
	var config struct {
		Architecture string
		OS           string
		Config       struct {
			Env []string
			Cmd []string
		}
		RootFS struct {
			Type    string
			DiffIDs []string `json:"diff_ids"`
		}
	}
	must(t, json.Unmarshal(configBytes, &config))
	if !reflect.DeepEqual(config.RootFS.DiffIDs, []string{res.LayerDigest}) || config.RootFS.Type != "layers" {
		t.Errorf("rootfs = %+v, want diff_ids [%s]", config.RootFS, res.LayerDigest)
	}
	// --env PATH replaces the default PATH in place rather than adding a second one.
	if want := []string{"PATH=/bin", "FOO=bar"}; !reflect.DeepEqual(config.Config.Env, want) {
		t.Errorf("env = %q, want %q", config.Config.Env, want)
	}
	if config.OS != "linux" || config.Architecture != "amd64" || !reflect.DeepEqual(config.Config.Cmd, []string{"sh"}) {
		t.Errorf("config = %+v", config)
	}

	lfiles, lheaders := readArchive(t, bytes.NewReader(layer))
	if h := lheaders["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
		t.Errorf("bin/sh = %+v, want symlink to busybox", h)
	}
	if h := lheaders["bin/echo"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "bin/busybox" {
		t.Errorf("bin/echo = %+v, want hard link to bin/busybox", h)
	}
	if h := lheaders["bin/busybox"]; h == nil || h.Mode&0o111 == 0 || h.Uid != 0 || h.Gid != 0 {
		t.Errorf("bin/busybox = %+v, want executable, owned by root", h)
	}
	if h := lheaders["data/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("parent dir of the filler missing: %+v", h)
	}
	if got := len(lfiles["data/filler"]); got != 4096 {
		t.Errorf("filler is %d bytes, want 4096", got)
	}
}

func TestBuildIsReproducible(t *testing.T) {
	dir := t.TempDir()
	o := options{Out: filepath.Join(dir, "a.tar"), Names: []string{"x.io/a:1"}, Arch: "amd64", FillerBytes: 1000, FillerSeed: 42, FillerPath: "/f"}
	a, err := build(o)
	must(t, err)
	o.Out = filepath.Join(dir, "b.tar")
	b, err := build(o)
	must(t, err)
	if a.LayerDigest != b.LayerDigest || a.ConfigDigest != b.ConfigDigest {
		t.Errorf("same inputs, different digests: %+v vs %+v", a, b)
	}

	// Without a seed every build gets fresh filler: the GC tests rely on distinct images.
	o.FillerSeed = 0
	o.Out = filepath.Join(dir, "c.tar")
	c, err := build(o)
	must(t, err)
	o.Out = filepath.Join(dir, "d.tar")
	d, err := build(o)
	must(t, err)
	if c.LayerDigest == d.LayerDigest {
		t.Errorf("unseeded filler produced identical layers %s", c.LayerDigest)
	}
	// A filler-only layer is the filler plus tar overhead: header, padding, end-of-archive blocks.
	if c.LayerSize < 1000 || c.LayerSize > 1000+4*512+1024 {
		t.Errorf("layer size %d not within tar overhead of 1000", c.LayerSize)
	}
}

func TestSymlinksGetParentsOnce(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "bin", "busybox"), []byte("x"), 0o755))
	o := options{
		Out: filepath.Join(dir, "a.tar"), Names: []string{"x.io/a:1"}, Root: root, Arch: "amd64",
		Symlinks: []symlink{{"/bin/sh", "busybox"}, {"/bin/ls", "busybox"}, {"/usr/bin/env", "/bin/busybox"}},
	}
	res, err := build(o)
	must(t, err)
	f, err := os.Open(o.Out)
	must(t, err)
	defer f.Close()
	files, _ := readArchive(t, f)
	var manifest []struct{ Layers []string }
	must(t, json.Unmarshal(files["manifest.json"], &manifest))

	tr := tar.NewReader(bytes.NewReader(files[manifest[0].Layers[0]]))
	count := map[string]int{}
	links := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		count[h.Name]++
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
		}
	}
	want := map[string]string{"bin/sh": "busybox", "bin/ls": "busybox", "usr/bin/env": "/bin/busybox"}
	if !reflect.DeepEqual(links, want) {
		t.Errorf("symlinks = %v, want %v", links, want)
	}
	// bin/ comes from the tree; usr/ and usr/bin/ are made for the symlink, once each.
	for _, d := range []string{"bin/", "usr/", "usr/bin/"} {
		if count[d] != 1 {
			t.Errorf("directory %s written %d times, want once", d, count[d])
		}
	}
	if res.LayerSize == 0 {
		t.Error("empty layer")
	}

	// A symlink over a path the tree already has is a mistake, not a silent duplicate entry.
	o.Out = filepath.Join(dir, "b.tar")
	o.Symlinks = []symlink{{"/bin/busybox", "x"}}
	if _, err := build(o); err == nil {
		t.Error("symlink over an existing file accepted")
	}
}

func TestValidate(t *testing.T) {
	for name, o := range map[string]options{
		"no out":       {Names: []string{"a:1"}},
		"no name":      {Out: "x"},
		"no tag":       {Out: "x", Names: []string{"docker.io/library/busybox"}},
		"port no tag":  {Out: "x", Names: []string{"localhost:5000/busybox"}},
		"bad env":      {Out: "x", Names: []string{"a:1"}, Env: []string{"NOEQUALS"}},
		"root symlink": {Out: "x", Names: []string{"a:1"}, Symlinks: []symlink{{"/", "x"}}},
	} {
		if err := o.validate(); err == nil {
			t.Errorf("%s: validate() = nil, want an error", name)
		}
	}
}

func TestParseArgv(t *testing.T) {
	for in, want := range map[string][]string{
		"":                     nil,
		"sh":                   {"sh"},
		`["sh","-c","echo 1"]`: {"sh", "-c", "echo 1"},
	} {
		got, err := parseArgv(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseArgv(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseArgv(`["unterminated`); err == nil {
		t.Error("parseArgv accepted broken JSON")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
