// Command mkimage writes a single-layer container image as a docker-archive tar (the format of
// `docker save`), which `ctr -n k8s.io images import` loads. nodelet's development and CI machines reach
// no registry, so every image a test uses is made here from local files.
//
//	mkimage --out busybox.tar --name docker.io/library/busybox:1.35 --root ./rootfs --cmd '["sh"]'
//	mkimage --out gc-7.tar --name example.com/gc:7 --filler-bytes 10485760
//
// The layer is deterministic for a given root directory (sorted entries, owner root, fixed times), so
// rebuilding an image yields the same digests. --filler-bytes adds one file of incompressible bytes: the
// image GC tests need many distinct images whose size is known in advance; pass --filler-seed to make
// the filler (and so the image ID) reproducible too.
//
// Only the standard library is used, so it builds anywhere the module does and needs no vendoring.
package main

import (
	"archive/tar"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// epoch is the timestamp of every layer entry and of the config, so identical inputs give identical
// digests. Not the Unix epoch itself: some tools treat a zero mtime as "unset".
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// options is everything the flags describe; build() does the work so tests can call it directly.
type options struct {
	Out         string
	Names       []string
	Root        string
	Entrypoint  []string
	Cmd         []string
	Env         []string
	WorkingDir  string
	User        string
	Labels      map[string]string
	Arch        string
	FillerBytes int64
	FillerSeed  uint64 // 0: random filler
	FillerPath  string
	// Symlinks are added to the layer without existing on disk: making hundreds of them with ln -s
	// (busybox's applets) costs a process each, which is seconds on a loaded 2-core machine.
	Symlinks []symlink
}

type symlink struct{ Path, Target string }

// result describes what was written; printed as one line so scripts and tests can pick values out.
type result struct {
	Archive      string `json:"archive"`
	LayerDigest  string `json:"layerDigest"`
	LayerSize    int64  `json:"layerSize"`
	ConfigDigest string `json:"configDigest"`
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var (
		o                            options
		names, env, labels, symlinks stringList
		entrypoint, cmd              string
	)
	flag.StringVar(&o.Out, "out", "", "output docker-archive tar (required)")
	flag.Var(&names, "name", "image reference to tag the image with, e.g. docker.io/library/busybox:1.35 (repeatable, required)")
	flag.StringVar(&o.Root, "root", "", "directory whose contents become the image's filesystem (optional: a filler-only image needs none)")
	flag.StringVar(&entrypoint, "entrypoint", "", `entrypoint as a JSON array (["/pause"]) or a single word`)
	flag.StringVar(&cmd, "cmd", "", `default command as a JSON array (["sh"]) or a single word`)
	flag.Var(&env, "env", "KEY=VALUE added to the image environment (repeatable; PATH has a default)")
	flag.StringVar(&o.WorkingDir, "workdir", "", "working directory")
	flag.StringVar(&o.User, "user", "", "user[:group] the image runs as by default")
	flag.Var(&labels, "label", "KEY=VALUE image label (repeatable)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "image architecture; must match the host for ctr to import it")
	flag.Int64Var(&o.FillerBytes, "filler-bytes", 0, "add a file of this many random, incompressible bytes to the layer")
	flag.Uint64Var(&o.FillerSeed, "filler-seed", 0, "seed for the filler bytes (0 = random, so every image is distinct)")
	flag.StringVar(&o.FillerPath, "filler-path", "/filler", "path of the filler file inside the image")
	flag.Var(&symlinks, "symlink", "PATH=TARGET: add a symlink at PATH in the image pointing to TARGET (repeatable)")
	flag.Parse()
	if flag.NArg() != 0 {
		fatalf("unexpected arguments: %q", flag.Args())
	}

	var err error
	o.Names = names
	o.Env = env
	if o.Entrypoint, err = parseArgv(entrypoint); err != nil {
		fatalf("--entrypoint: %v", err)
	}
	if o.Cmd, err = parseArgv(cmd); err != nil {
		fatalf("--cmd: %v", err)
	}
	for _, l := range symlinks {
		p, target, ok := strings.Cut(l, "=")
		if !ok {
			fatalf("--symlink %q: want PATH=TARGET", l)
		}
		o.Symlinks = append(o.Symlinks, symlink{Path: p, Target: target})
	}
	if len(labels) > 0 {
		o.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				fatalf("--label %q: want KEY=VALUE", l)
			}
			o.Labels[k] = v
		}
	}

	res, err := build(o)
	if err != nil {
		fatalf("%v", err)
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mkimage: "+format+"\n", args...)
	os.Exit(1)
}

// parseArgv accepts either a JSON array (the unambiguous form, as in a Dockerfile's exec form) or a plain
// word, which becomes a one-element list. Empty means "not set".
func parseArgv(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if !strings.HasPrefix(s, "[") {
		return []string{s}, nil
	}
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil {
		return nil, fmt.Errorf("parse JSON array %q: %w", s, err)
	}
	return argv, nil
}

// validate checks the options before anything is written.
func (o *options) validate() error {
	if o.Out == "" {
		return errors.New("--out is required")
	}
	if len(o.Names) == 0 {
		return errors.New("at least one --name is required")
	}
	for _, n := range o.Names {
		// A tag is required: without one, ctr import names the image "<name>:latest" or rejects it,
		// and kubelets pull ":latest" images on every start (pull policy Always).
		if i := strings.LastIndex(n, ":"); i < 0 || strings.Contains(n[i:], "/") {
			return fmt.Errorf("--name %q: needs an explicit :tag", n)
		}
	}
	if o.FillerBytes < 0 {
		return errors.New("--filler-bytes must not be negative")
	}
	if o.FillerBytes > 0 && entryName(o.FillerPath) == "" {
		return errors.New("--filler-path must name a file")
	}
	for _, e := range o.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("--env %q: want KEY=VALUE", e)
		}
	}
	for _, l := range o.Symlinks {
		if entryName(l.Path) == "" || l.Target == "" {
			return fmt.Errorf("--symlink %s=%s: needs a path below / and a target", l.Path, l.Target)
		}
	}
	return nil
}

func build(o options) (*result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	outDir := filepath.Dir(o.Out)

	// The layer is written to a temporary file first: its digest names it inside the archive and its
	// size goes in the tar header, and both are known only once it is complete.
	layerFile, err := os.CreateTemp(outDir, ".mkimage-layer-*.tar")
	if err != nil {
		return nil, fmt.Errorf("create temporary layer file: %w", err)
	}
	defer os.Remove(layerFile.Name())
	defer layerFile.Close()

	h := sha256.New()
	if err := writeLayer(io.MultiWriter(layerFile, h), o); err != nil {
		return nil, fmt.Errorf("write layer: %w", err)
	}
	layerSize, err := layerFile.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("size of layer: %w", err)
	}
	layerHex := hex.EncodeToString(h.Sum(nil))

	config, err := imageConfig(o, "sha256:"+layerHex)
	if err != nil {
		return nil, err
	}
	configSum := sha256.Sum256(config)
	configHex := hex.EncodeToString(configSum[:])

	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configHex + ".json",
		"RepoTags": o.Names,
		"Layers":   []string{layerHex + "/layer.tar"},
	}})
	if err != nil {
		return nil, fmt.Errorf("encode manifest.json: %w", err)
	}

	if _, err := layerFile.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind layer: %w", err)
	}
	// Written next to the destination and renamed into place, so a crash never leaves a truncated
	// archive that a later, idempotent runtime-up would import.
	tmpOut, err := os.CreateTemp(outDir, ".mkimage-out-*.tar")
	if err != nil {
		return nil, fmt.Errorf("create temporary archive: %w", err)
	}
	defer os.Remove(tmpOut.Name())
	defer tmpOut.Close()

	tw := tar.NewWriter(tmpOut)
	if err := addBytes(tw, configHex+".json", config); err != nil {
		return nil, err
	}
	if err := addDir(tw, layerHex+"/"); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: layerHex + "/layer.tar", Size: layerSize, Mode: 0o644, ModTime: epoch,
	}); err != nil {
		return nil, fmt.Errorf("archive header for layer: %w", err)
	}
	if _, err := io.Copy(tw, layerFile); err != nil {
		return nil, fmt.Errorf("copy layer into archive: %w", err)
	}
	if err := addBytes(tw, "manifest.json", manifest); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("finish archive: %w", err)
	}
	// CreateTemp makes 0600 files; an image archive is no secret and other tools may read it.
	if err := tmpOut.Chmod(0o644); err != nil {
		return nil, fmt.Errorf("chmod archive: %w", err)
	}
	if err := tmpOut.Close(); err != nil {
		return nil, fmt.Errorf("close archive: %w", err)
	}
	if err := os.Rename(tmpOut.Name(), o.Out); err != nil {
		return nil, fmt.Errorf("move archive into place: %w", err)
	}
	return &result{
		Archive:      o.Out,
		LayerDigest:  "sha256:" + layerHex,
		LayerSize:    layerSize,
		ConfigDigest: "sha256:" + configHex,
	}, nil
}

// imageConfig is the image config JSON (docker image spec v1.2, which OCI's config is compatible with).
func imageConfig(o options, diffID string) ([]byte, error) {
	env := mergeEnv(append([]string{defaultPath}, o.Env...))
	cfg := map[string]any{
		"Env": env,
	}
	if o.Entrypoint != nil {
		cfg["Entrypoint"] = o.Entrypoint
	}
	if o.Cmd != nil {
		cfg["Cmd"] = o.Cmd
	}
	if o.WorkingDir != "" {
		cfg["WorkingDir"] = o.WorkingDir
	}
	if o.User != "" {
		cfg["User"] = o.User
	}
	if len(o.Labels) > 0 {
		cfg["Labels"] = o.Labels
	}
	created := epoch.Format(time.RFC3339)
	b, err := json.Marshal(map[string]any{
		"architecture": o.Arch,
		"os":           "linux",
		"created":      created,
		"config":       cfg,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history":      []map[string]string{{"created": created, "created_by": "nodelet hack/mkimage"}},
	})
	if err != nil {
		return nil, fmt.Errorf("encode image config: %w", err)
	}
	return b, nil
}

// mergeEnv keeps the last value of each key, in first-seen order, so --env PATH=... replaces the default.
func mergeEnv(env []string) []string {
	idx := map[string]int{}
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if i, ok := idx[k]; ok {
			out[i] = e
			continue
		}
		idx[k] = len(out)
		out = append(out, e)
	}
	return out
}

func addBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: name, Size: int64(len(b)), Mode: 0o644, ModTime: epoch,
	}); err != nil {
		return fmt.Errorf("archive header for %s: %w", name, err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func addDir(tw *tar.Writer, name string) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: epoch}); err != nil {
		return fmt.Errorf("archive header for %s: %w", name, err)
	}
	return nil
}

// writeLayer writes the layer tar: the root directory's tree, the extra symlinks, then the filler.
func writeLayer(w io.Writer, o options) error {
	l := &layer{tw: tar.NewWriter(w), seen: map[string]bool{}}
	if o.Root != "" {
		if err := l.addTree(o.Root); err != nil {
			return err
		}
	}
	for _, sl := range o.Symlinks {
		name := entryName(sl.Path)
		if l.seen[name] {
			return fmt.Errorf("--symlink %s: path already in the image", sl.Path)
		}
		if err := l.addParents(name); err != nil {
			return err
		}
		if err := l.write(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: sl.Target, Mode: 0o777, ModTime: epoch}); err != nil {
			return err
		}
	}
	if o.FillerBytes > 0 {
		if err := l.addFiller(o); err != nil {
			return err
		}
	}
	return l.tw.Close()
}

// entryName turns an image path ("/bin/sh") into a tar entry name ("bin/sh"); "" for the root.
func entryName(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// layer is a layer tar being written, remembering which entries it has, so that extra entries get
// their parent directories exactly once.
type layer struct {
	tw   *tar.Writer
	seen map[string]bool // entry names without trailing slash
}

func (l *layer) write(hdr *tar.Header) error {
	if err := l.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("layer header for %s: %w", hdr.Name, err)
	}
	l.seen[strings.TrimSuffix(hdr.Name, "/")] = true
	return nil
}

// addParents writes the missing parent directories of name, outermost first. Tar readers would
// create them implicitly, but explicit entries keep their modes predictable (0755, root).
func (l *layer) addParents(name string) error {
	var missing []string
	for dir := path.Dir(name); dir != "." && dir != "/" && !l.seen[dir]; dir = path.Dir(dir) {
		missing = append(missing, dir)
	}
	sort.Strings(missing)
	for _, dir := range missing {
		if err := l.write(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	return nil
}

// addTree adds every entry below root in lexical order (filepath.WalkDir's order), owned by root:root
// with fixed times, so the layer depends only on names, modes, link targets and contents.
func (l *layer) addTree(root string) error {
	st, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("root directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("root %s is not a directory", root)
	}
	// Hard links inside the tree become tar hard links, as `docker save` does, instead of copies.
	type inode struct{ dev, ino uint64 }
	hardlinks := map[inode]string{}

	return filepath.WalkDir(root, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		hdr := &tar.Header{
			Name:    name,
			Mode:    int64(fi.Mode().Perm()),
			ModTime: epoch,
		}
		mode := fi.Mode()
		if mode&fs.ModeSetuid != 0 {
			hdr.Mode |= 0o4000
		}
		if mode&fs.ModeSetgid != 0 {
			hdr.Mode |= 0o2000
		}
		if mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		var sys *syscall.Stat_t
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			sys = s
		}
		switch {
		case mode.IsDir():
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("readlink %s: %w", p, err)
			}
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = target
		case mode.IsRegular():
			if sys != nil && sys.Nlink > 1 {
				key := inode{uint64(sys.Dev), sys.Ino}
				if first, ok := hardlinks[key]; ok {
					hdr.Typeflag = tar.TypeLink
					hdr.Linkname = first
					break
				}
				hardlinks[key] = name
			}
			hdr.Typeflag = tar.TypeReg
			hdr.Size = fi.Size()
		case mode&fs.ModeNamedPipe != 0:
			hdr.Typeflag = tar.TypeFifo
		case mode&fs.ModeDevice != 0 && sys != nil:
			hdr.Typeflag = tar.TypeBlock
			if mode&fs.ModeCharDevice != 0 {
				hdr.Typeflag = tar.TypeChar
			}
			hdr.Devmajor = int64(unixMajor(uint64(sys.Rdev)))
			hdr.Devminor = int64(unixMinor(uint64(sys.Rdev)))
		case mode&fs.ModeSocket != 0:
			// A socket is runtime state, not image content; tar cannot carry it anyway.
			return nil
		default:
			return fmt.Errorf("%s: unsupported file type %v", p, mode.Type())
		}
		if err := l.write(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return fmt.Errorf("open %s: %w", p, err)
			}
			_, err = io.Copy(l.tw, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("copy %s into layer: %w", p, err)
			}
		}
		return nil
	})
}

// addFiller adds o.FillerBytes random bytes at o.FillerPath, creating missing parent directories.
// Random bytes are incompressible, so the image's stored size is what the caller asked for whatever
// compression a runtime or registry applies.
func (l *layer) addFiller(o options) error {
	name := entryName(o.FillerPath)
	if l.seen[name] {
		return fmt.Errorf("--filler-path %s: path already in the image", o.FillerPath)
	}
	if err := l.addParents(name); err != nil {
		return err
	}
	if err := l.write(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: o.FillerBytes, Mode: 0o644, ModTime: epoch}); err != nil {
		return err
	}
	var src io.Reader = rand.Reader
	if o.FillerSeed != 0 {
		var seed [32]byte
		for i := range 8 {
			seed[i] = byte(o.FillerSeed >> (8 * i))
		}
		src = mrand.NewChaCha8(seed)
	}
	if _, err := io.CopyN(l.tw, src, o.FillerBytes); err != nil {
		return fmt.Errorf("write filler: %w", err)
	}
	return nil
}

// unixMajor and unixMinor decode a Linux dev_t (glibc's gnu_dev_major/minor encoding).
func unixMajor(dev uint64) uint32 { return uint32((dev>>8)&0xfff) | uint32((dev>>32)&0xfffff000) }
func unixMinor(dev uint64) uint32 { return uint32(dev&0xff) | uint32((dev>>12)&0xffffff00) }
