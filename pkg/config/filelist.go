package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/pod"
)

// manifestExts are the only files read from a manifest dir. Anything else
// (editor swap and backup files, README, .rpmsave) is ignored, so a text
// editor working in the directory cannot start a pod from its scratch file.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// isManifestName reports whether a file in a manifest dir is read.
func isManifestName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	return manifestExts[strings.ToLower(filepath.Ext(name))]
}

// listManifests returns the manifest files at path, sorted: path itself if it
// is a file (whatever its name: the operator named it), else the regular
// files of the directory with a manifest name. Subdirectories are not
// descended into, as upstream.
func listManifests(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("list manifest dir: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !isManifestName(e.Name()) {
			continue
		}
		full := filepath.Join(path, e.Name())
		switch t := e.Type(); {
		case t.IsRegular():
		case t&fs.ModeSymlink != 0:
			// A symlink to a directory is skipped; a dangling one is listed
			// so that reading it reports the problem.
			if st, err := os.Stat(full); err == nil && st.IsDir() {
				continue
			}
		default:
			// Directories, and FIFOs and sockets a read would block on.
			continue
		}
		out = append(out, full)
	}
	return out, nil
}

// readManifestFile reads one manifest file and returns its content and a
// version string that changes whenever the content does. An oversized file
// is refused from its size alone, without being read.
func readManifestFile(path string) (data []byte, version string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "stat: " + err.Error(), err
	}
	statVersion := fmt.Sprintf("size=%d mtime=%d", st.Size(), st.ModTime().UnixNano())
	if !st.Mode().IsRegular() {
		return nil, statVersion, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > MaxManifestSize {
		return nil, statVersion, ErrManifestTooLarge
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, statVersion, err
	}
	defer f.Close()
	data, err = ReadManifest(f)
	if err != nil {
		return nil, statVersion, err
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), nil
}

// fileState is what the file source remembers about one manifest file.
type fileState struct {
	version  string  // content version of the last read
	decoded  bool    // pod and err are the result of decoding that version
	pod      *v1.Pod // pod of that content; nil if it is unusable
	err      error   // why that content is unusable
	attempts int     // reads that found this same unusable content
	// lastGood is the pod of the last usable content of this file. It keeps
	// running while the file is broken (see FileSource).
	lastGood *v1.Pod
	// reported is the problem last reported for this file (version and
	// message), so each one is reported once.
	reported string
	// stamp is the file's stamp when version was read; trusted: that read
	// came late enough after the file's last change for the stamp to
	// show any later one (stampSettled).
	stamp   fileStamp
	trusted bool
}

// fileStamp is what the file system says of a file's content without
// reading it: its inode, size and modification and change times. The
// change time (ctime) cannot be set by a writer: every write, chmod or
// rename onto the path gives a new one (or, through a symlink swapped to a
// new target, a new inode).
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // Unix nanoseconds
}

func stampOf(fi fs.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, false
	}
	return fileStamp{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}

// stampGranularity bounds how coarse a file system's timestamps are (a
// kernel tick on ext4 and xfs, seconds on some others), with a margin.
const stampGranularity = 2 * time.Second

// stampSettled decides whether a read that began at readAt, of a file
// with this stamp, leaves the stamp trustworthy: a later change would give
// a new stamp. It does when the read began more than stampGranularity after
// the file's last change. A write in the same timestamp tick as the change
// before it can leave the stamp as it was (the "racy" case git knows), so a
// file changed just before a read is read again next time; once it has
// been still for a while its stamp is enough. Re-reading and hashing every
// manifest every 20 s was a tenth of an idle node's CPU.
func stampSettled(stamp fileStamp, readAt time.Time) bool {
	return readAt.UnixNano()-max(stamp.mtime, stamp.ctime) > int64(stampGranularity)
}

// effective is the pod the file currently contributes.
func (st *fileState) effective() *v1.Pod {
	if st.pod != nil {
		return st.pod
	}
	return st.lastGood
}

// retryPending reports a problem that may be a write in progress and has not
// been seen often enough yet to be reported.
func (st *fileState) retryPending(maxAttempts int) bool {
	return st.err != nil && !errors.Is(st.err, ErrManifestTooLarge) && st.attempts < maxAttempts
}

// load re-reads a file (at now) and updates its state. A file whose stamp
// is the trusted one of content already decoded is not read again
// (stampSettled), content already decoded is not decoded again; a read
// error is always retried.
func (st *fileState) load(path, nodeName string, now time.Time) {
	var stamp fileStamp
	stamped := false
	if fi, err := os.Stat(path); err == nil {
		stamp, stamped = stampOf(fi)
	}
	if stamped && st.decoded && st.trusted && stamp == st.stamp {
		if st.err != nil {
			st.attempts++
		}
		return
	}
	// Taken before the read: a change during the read shows in the next
	// stamp.
	st.stamp, st.trusted = stamp, false
	defer func() { st.trusted = stamped && st.decoded && stampSettled(stamp, now) }()
	data, version, err := readManifestFile(path)
	if err == nil && version == st.version && st.decoded {
		if st.err != nil {
			st.attempts++
		}
		return
	}
	if version != st.version {
		st.attempts = 0
	}
	st.version, st.decoded = version, err == nil
	st.attempts++
	st.pod, st.err = nil, nil
	if err != nil {
		st.err = fmt.Errorf("read: %w", err)
		return
	}
	m, err := DecodeManifest(data, false)
	if err != nil {
		st.err = err
		return
	}
	if len(m.Warnings) > 0 {
		klog.InfoS("Pod manifest has fields nodelet ignores", "path", path, "warnings", m.Warnings)
	}
	p, err := StaticPod(m.Pods[0], Origin{Source: pod.FileSource, Location: path}, nodeName)
	if err != nil {
		st.err = err
		return
	}
	st.pod, st.lastGood, st.attempts = p, p, 0
}

// fileEntry is one manifest file's contribution to the source's pods.
type fileEntry struct {
	path string
	pod  *v1.Pod // nil if the file has no usable pod
}

// selectPods picks the pods of a manifest dir from its files, in path order.
// When two files define the same pod (namespace and name), the lexically
// first path wins, so the choice does not depend on which file was written
// last; the other file gets an error naming both.
func selectPods(entries []fileEntry) ([]*v1.Pod, map[string]error) {
	var pods []*v1.Pod
	errs := map[string]error{}
	owner := map[string]string{}
	for _, e := range entries {
		if e.pod == nil {
			continue
		}
		name := e.pod.Namespace + "/" + e.pod.Name
		if first, ok := owner[name]; ok {
			errs[e.path] = fmt.Errorf("pod %s is already defined in %s; ignoring %s", name, first, e.path)
			continue
		}
		owner[name] = e.path
		pods = append(pods, e.pod)
	}
	return pods, errs
}
