package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// Options select what to read, as kubectl logs' flags do.
type Options struct {
	// Follow keeps reading as the container writes, until it stops
	// running or the context ends.
	Follow bool
	// Timestamps prefixes each line with its time.
	Timestamps bool
	// TailLines, when set, starts that many lines before the end of the
	// file (0: at the end).
	TailLines *int64
	// LimitBytes, when set, stops after that many bytes of output.
	LimitBytes *int64
	// Since, when not zero, skips entries older than it.
	Since time.Time
}

// IsRunningFunc tells whether a container still runs, so that following
// its log can stop when it exits.
type IsRunningFunc func(ctx context.Context, containerID string) (bool, error)

// Reader reads CRI container logs.
type Reader struct {
	isRunning IsRunningFunc
	// pollInterval is how often a follower looks for news when inotify is
	// quiet or unavailable; it bounds how late an exit is noticed.
	pollInterval time.Duration
}

// NewReader returns a Reader that asks isRunning when following a log.
func NewReader(isRunning IsRunningFunc) *Reader {
	return &Reader{isRunning: isRunning, pollInterval: time.Second}
}

// errLimit ends a read that reached Options.LimitBytes.
var errLimit = errors.New("byte limit reached")

// ReadLogs writes the log of container containerID, found at path, to
// stdout and stderr, by the stream each line was written to. Without
// Options.Follow it reads the file as it is when the call begins. With
// Options.Follow it returns when the container no longer runs and its log
// is drained, or when ctx ends; a rotation (the file renamed and a new one
// opened at path) is followed to the new file.
func (rd *Reader) ReadLogs(ctx context.Context, path, containerID string, opts Options, stdout, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open log of container %s: %w", containerID, err)
	}
	defer func() { f.Close() }()
	// One size for the whole read: lines written while the log is read
	// would make "the last n lines" more than n.
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("log %s: %w", path, err)
	}
	size := st.Size()
	var start int64
	if opts.TailLines != nil {
		if start, err = tailOffset(f, size, *opts.TailLines); err != nil {
			return fmt.Errorf("tail log %s: %w", path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("tail log %s: %w", path, err)
		}
	}
	w := newWriter(opts, stdout, stderr)
	if !opts.Follow {
		return readUpTo(io.NewSectionReader(f, start, size-start), w)
	}

	watcher := newWatcher(filepath.Dir(path))
	if watcher != nil {
		defer watcher.Close()
	}

	br := bufio.NewReaderSize(f, 32<<10)
	var pending []byte // an unterminated line at EOF, completed by the next read
	// The runtime is asked whether the container still runs at most once a
	// poll interval: a chatty container wakes the follower at every write.
	var lastCheck time.Time
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if err == nil {
				if len(pending) > 0 {
					line = append(pending, line...)
					pending = nil
				}
				if werr := w.writeLine(line); werr != nil {
					return finish(werr)
				}
				continue
			}
			pending = append(pending, line...)
		}
		if err != io.EOF {
			return fmt.Errorf("read log %s: %w", path, err)
		}
		// At the end of what is written so far: rotated, stopped, or wait.
		if rotated(f, path) {
			// The old file is complete once renamed: finish it, then
			// continue from the start of the new one.
			rest, err := io.ReadAll(br)
			if err != nil {
				return fmt.Errorf("read rotated log %s: %w", path, err)
			}
			if err := w.writeChunk(append(pending, rest...)); err != nil {
				return finish(err)
			}
			pending = nil
			nf, err := os.Open(path)
			if err != nil {
				if os.IsNotExist(err) {
					// Renamed and not reopened yet, or removed with a
					// container that is gone: wait while it runs.
					running, err := rd.running(ctx, containerID)
					if err != nil || !running {
						return err
					}
					if !rd.wait(ctx, watcher) {
						return nil
					}
					continue
				}
				return fmt.Errorf("reopen rotated log %s: %w", path, err)
			}
			f.Close()
			f = nf
			br.Reset(f)
			continue
		}
		if time.Since(lastCheck) < rd.pollInterval {
			if !rd.wait(ctx, watcher) {
				return nil
			}
			continue
		}
		lastCheck = time.Now()
		running, err := rd.running(ctx, containerID)
		if err != nil {
			return err
		}
		if !running {
			// Anything written between our last read and the exit is
			// there now: drain it, then stop.
			rest, err := io.ReadAll(br)
			if err != nil {
				return fmt.Errorf("read log %s: %w", path, err)
			}
			return finish(w.writeChunk(append(pending, rest...)))
		}
		if !rd.wait(ctx, watcher) {
			return nil
		}
	}
}

// readUpTo writes every line r holds; the last may lack its newline.
func readUpTo(r io.Reader, w *writer) error {
	br := bufio.NewReaderSize(r, 32<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if werr := w.writeLine(line); werr != nil {
				return finish(werr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read log: %w", err)
		}
	}
}

func (rd *Reader) running(ctx context.Context, id string) (bool, error) {
	if rd.isRunning == nil {
		return false, nil
	}
	ok, err := rd.isRunning(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("state of container %s: %w", id, err)
	}
	return ok, nil
}

// wait blocks until the log directory changes, the poll interval passes or
// ctx ends (false).
func (rd *Reader) wait(ctx context.Context, watcher *fsnotify.Watcher) bool {
	timer := time.NewTimer(rd.pollInterval)
	defer timer.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if watcher != nil {
		events, errs = watcher.Events, watcher.Errors
	}
	select {
	case <-ctx.Done():
		return false
	case <-events:
	case <-errs:
	case <-timer.C:
	}
	return true
}

func newWatcher(dir string) *fsnotify.Watcher {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		klog.V(4).InfoS("No inotify for following a log, polling", "err", err)
		return nil
	}
	if err := w.Add(dir); err != nil {
		klog.V(4).InfoS("No inotify for following a log, polling", "dir", dir, "err", err)
		w.Close()
		return nil
	}
	return w
}

// rotated reports whether path now names another file than f (the log was
// moved aside and the runtime opened a new one), or none at all.
func rotated(f *os.File, path string) bool {
	cur, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	if err != nil {
		return os.IsNotExist(err)
	}
	return !os.SameFile(cur, now)
}

func finish(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

// tailOffset returns the offset of the start of the n-th line from the end
// of the first size bytes of f. A last line without its newline counts as a
// line.
func tailOffset(f *os.File, size, n int64) (int64, error) {
	if n <= 0 {
		return size, nil
	}
	const block = 32 << 10
	buf := make([]byte, block)
	end := size
	// A trailing newline ends the last line; it does not start one.
	skipTrailing := true
	var found int64
	for end > 0 {
		start := max(end-block, 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && err != io.EOF {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				skipTrailing = false
				continue
			}
			if skipTrailing {
				skipTrailing = false
				continue
			}
			found++
			if found == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
