package config

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/pod"
)

const (
	// DefaultFileCheckFrequency is the re-list period when none is given
	// (upstream fileCheckFrequency).
	DefaultFileCheckFrequency = 20 * time.Second
	// fileRetryDelay is how soon a file that did not decode is read again:
	// long enough for a writer to finish, short enough not to delay a pod.
	fileRetryDelay = 150 * time.Millisecond
	// fileMaxAttempts bounds the reads of the same broken content before it is
	// reported, and the quick retries.
	fileMaxAttempts = 3
	// fileSettleDelay coalesces the burst of events an editor's save makes,
	// and lets a file written in place in several writes be read once.
	fileSettleDelay = 20 * time.Millisecond
	// fileCreateSettleDelay is the settle delay of a file that appeared: a
	// manifest renamed into place (the way to write one atomically) is
	// complete, so waiting longer only delays the pod. Creating a file and
	// then writing it also brings write events, which wait the full delay.
	// Long enough to take the events of many files written at once in one
	// read of the directory.
	fileCreateSettleDelay = 2 * time.Millisecond
)

// FileSource reads static pod manifests from a file or a directory and sends
// a SET of all their pods whenever that set changes.
//
// It watches the path with inotify (the directory itself, and its parent so
// that a directory created or replaced later is noticed) and re-lists every
// period as a safety net for missed events and filesystems without inotify.
//
// Broken manifests. A file that fails to read, decode or validate is read
// again shortly, a few times, because it is usually caught mid-write. If it
// stays broken it is reported once (per content) through the Reporter, and
// the pod of the last good version of that same file keeps running: a typo
// in an edit must not take down a running static pod (upstream drops it).
// Removing the file removes the pod. A file that never was valid contributes
// nothing.
type FileSource struct {
	path     string
	nodeName string
	period   time.Duration
	out      chan<- PodUpdate
	reporter Reporter
	adopt    *Adoptions

	retryDelay  time.Duration
	maxAttempts int
	settleDelay time.Duration
	// createSettleDelay replaces settleDelay for an event that is only a
	// creation.
	createSettleDelay time.Duration

	// Owned by Run.
	watcher       *fsnotify.Watcher
	parentWatched bool
	dirWatched    bool
	files         map[string]*fileState
	sent          sets.Set[string] // podVersions of the last SET; nil before the first
	pathProblem   string           // last problem logged about the path itself
}

// NewFileSource returns a source for the manifests at path (a directory or
// a single file) for node nodeName, re-listing every period (the default if
// zero), sending into out (from Merger.Channel).
func NewFileSource(path, nodeName string, period time.Duration, out chan<- PodUpdate, opts ...SourceOption) *FileSource {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if period <= 0 {
		period = DefaultFileCheckFrequency
	}
	o := buildSourceOptions(opts)
	return &FileSource{
		path:              filepath.Clean(path),
		nodeName:          nodeName,
		period:            period,
		out:               out,
		reporter:          o.reporter,
		adopt:             o.adoptions,
		retryDelay:        fileRetryDelay,
		maxAttempts:       fileMaxAttempts,
		settleDelay:       fileSettleDelay,
		createSettleDelay: fileCreateSettleDelay,
		files:             map[string]*fileState{},
	}
}

// Run lists the manifests at once, then on every change and every period,
// until ctx is done.
func (s *FileSource) Run(ctx context.Context) error {
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		klog.ErrorS(err, "Cannot watch manifest path; polling only", "path", s.path, "period", s.period)
	} else {
		s.watcher = w
		events, watchErrs = w.Events, w.Errors
		defer func() {
			_ = w.Close()
			s.watcher = nil
		}()
	}

	ticker := time.NewTicker(s.period)
	defer ticker.Stop()
	// soon runs a sync after a short delay: to let a burst of events settle,
	// or to retry a file caught mid-write. deadline is when it fires.
	soon := time.NewTimer(0)
	defer soon.Stop()
	armed, deadline := true, time.Now()
	arm := func(d time.Duration) {
		at := time.Now().Add(d)
		if armed && !at.Before(deadline) {
			return
		}
		soon.Reset(d)
		armed, deadline = true, at
	}

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if s.sync(ctx) {
				arm(s.retryDelay)
			}
		case <-soon.C:
			armed = false
			if s.sync(ctx) {
				arm(s.retryDelay)
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if s.noteEvent(ev) {
				arm(s.eventSettleDelay(ev))
			}
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			// Typically a queue overflow: events were lost, so re-list.
			klog.ErrorS(err, "Manifest watch error; re-listing", "path", s.path)
			arm(0)
		}
	}
}

// eventSettleDelay is how long to wait for more events after ev before
// reading the manifests.
func (s *FileSource) eventSettleDelay(ev fsnotify.Event) time.Duration {
	if ev.Op == fsnotify.Create {
		return s.createSettleDelay
	}
	return s.settleDelay
}

// noteEvent keeps the watches in step with the path and reports whether the
// event may change the pods.
func (s *FileSource) noteEvent(ev fsnotify.Event) bool {
	gone := ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	switch {
	case ev.Name == s.path:
		// The directory (or file) itself was created, replaced or removed;
		// a watch on the old directory is dead.
		if gone || ev.Has(fsnotify.Create) {
			s.dropWatch(s.path, &s.dirWatched)
		}
		return true
	case ev.Name == filepath.Dir(s.path):
		if gone {
			s.dropWatch(ev.Name, &s.parentWatched)
		}
		return gone
	case filepath.Dir(ev.Name) == s.path:
		return isManifestName(filepath.Base(ev.Name))
	}
	return false
}

func (s *FileSource) dropWatch(path string, flag *bool) {
	if *flag && s.watcher != nil {
		_ = s.watcher.Remove(path) // may already be gone with the inode
	}
	*flag = false
}

// ensureWatches adds the watches that are missing: the parent of the path,
// to see the path appear and disappear, and the directory itself.
func (s *FileSource) ensureWatches(isDir bool) {
	if s.watcher == nil {
		return
	}
	if parent := filepath.Dir(s.path); !s.parentWatched && parent != s.path {
		s.parentWatched = s.watcher.Add(parent) == nil
	}
	switch {
	case isDir && !s.dirWatched:
		if err := s.watcher.Add(s.path); err != nil {
			klog.ErrorS(err, "Cannot watch manifest dir; relying on the period", "path", s.path, "period", s.period)
		} else {
			s.dirWatched = true
		}
	case !isDir && s.dirWatched:
		s.dropWatch(s.path, &s.dirWatched)
	}
}

// sync lists and reads the manifests, reports new problems, and sends a SET
// if the pods changed. It reports whether a file should be read again soon.
func (s *FileSource) sync(ctx context.Context) (retry bool) {
	// Watch before listing, so nothing written in between is missed.
	fi, statErr := os.Stat(s.path)
	s.ensureWatches(statErr == nil && fi.IsDir())
	paths, err := listManifests(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		// Not an error: the directory may be created later (kubeadm does).
		// Upstream also reports an empty source so the node can go ready.
		s.notePath("Manifest path does not exist yet; waiting for it", nil)
		s.files = map[string]*fileState{}
		s.send(ctx, nil)
		return false
	}
	if err != nil {
		// Unreadable, not absent: keep what runs and try again.
		s.notePath("Cannot list manifest path; keeping the current pods", err)
		return false
	}
	if s.pathProblem != "" {
		klog.InfoS("Manifest path is readable again", "path", s.path)
		s.pathProblem = ""
	}

	entries := make([]fileEntry, 0, len(paths))
	current := sets.New(paths...)
	for p := range s.files {
		if !current.Has(p) {
			delete(s.files, p)
		}
	}
	for _, p := range paths {
		st := s.files[p]
		if st == nil {
			st = &fileState{}
			s.files[p] = st
		}
		st.load(p, s.nodeName, time.Now())
		entries = append(entries, fileEntry{path: p, pod: st.effective()})
		retry = retry || st.retryPending(s.maxAttempts)
	}
	pods, dupErrs := selectPods(entries)
	for _, p := range paths {
		s.report(p, s.files[p], dupErrs[p])
	}
	s.send(ctx, pods)
	return retry
}

// report tells the Reporter about a file's problem the first time it is seen
// for the file's current content. A problem that may be a write in progress
// waits for the retries first.
func (s *FileSource) report(path string, st *fileState, dupErr error) {
	problem := st.err
	if problem == nil {
		problem = dupErr
	}
	if problem == nil {
		if st.reported != "" {
			klog.InfoS("Pod manifest is usable again", "path", path)
			st.reported = ""
		}
		return
	}
	if st.err != nil && st.retryPending(s.maxAttempts) {
		return
	}
	key := st.version + "\x00" + problem.Error()
	if key == st.reported {
		return
	}
	st.reported = key
	if st.err != nil && st.lastGood != nil {
		problem = &keptPodError{err: problem, pod: st.lastGood}
	}
	s.reporter.ManifestError(pod.FileSource, path, problem)
}

// keptPodError says that the pod from a file's last good version still runs.
type keptPodError struct {
	err error
	pod *v1.Pod
}

func (e *keptPodError) Error() string {
	return e.err.Error() + " (keeping pod " + e.pod.Namespace + "/" + e.pod.Name + " from the last valid version of the file)"
}

func (e *keptPodError) Unwrap() error { return e.err }

// notePath logs a problem with the manifest path itself once, not on every
// period.
func (s *FileSource) notePath(msg string, err error) {
	key := msg
	if err != nil {
		key += ": " + err.Error()
	}
	if key == s.pathProblem {
		return
	}
	s.pathProblem = key
	if err != nil {
		s.reporter.ManifestError(pod.FileSource, s.path, err)
		return
	}
	klog.InfoS(msg, "path", s.path)
}

// send sends a SET with pods unless it is the same set as last time.
func (s *FileSource) send(ctx context.Context, pods []*v1.Pod) {
	pods = adoptAll(s.adopt, pods)
	uids := podVersions(pods)
	if s.sent != nil && s.sent.Equal(uids) {
		return
	}
	u := PodUpdate{Op: SET, Source: pod.FileSource, Pods: copyPods(pods)}
	select {
	case s.out <- u:
		s.sent = uids
		klog.V(2).InfoS("Manifest pods changed", "path", s.path, "pods", len(pods))
	case <-ctx.Done():
	}
}
