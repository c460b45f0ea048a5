package podsync

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/pkg/layout"
	"github.com/nodelet/nodelet/pkg/logs"
	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
	"github.com/nodelet/nodelet/pkg/runtime/cristatus"
)

// A container's termination message is a file in the pod's directory that
// the syncer creates and mounts at its terminationMessagePath
// (terminationMessageFile), and that ReadPodStatus reads back once the
// container exited: files of the pod on the node, not CRI.

// PodStateReader is how ReadPodStatus asks the runtime; *cri.Client
// implements it.
type PodStateReader interface {
	PodState(ctx context.Context, uid types.UID) (*cri.PodState, error)
}

// ReadPodStatus is what the runtime has for one pod UID, in the runtime
// model (package cristatus), with the termination messages of its exited
// containers added to their messages. A pod with nothing in the runtime
// yields an empty status, not an error.
func ReadPodStatus(ctx context.Context, r PodStateReader, uid types.UID, name, namespace string) (*runtime.PodStatus, error) {
	s, err := r.PodState(ctx, uid)
	if err != nil {
		return nil, fmt.Errorf("status of pod %s/%s (%s): %w", namespace, name, uid, err)
	}
	ps := cristatus.PodStatus(uid, name, namespace, s)
	for _, cs := range ps.Containers {
		if cs.State == runtime.ContainerStateExited {
			cs.Message = withTerminationMessage(cs.Message, terminationMessage(ctx, cs))
		}
	}
	return ps, nil
}

// Termination message limits, as upstream.
const (
	// MaxTerminationMessage is the most read from a container's
	// termination message file (its last bytes).
	MaxTerminationMessage = 4 << 10
	// MaxPodTerminationMessages is the most all of a pod's containers'
	// messages may take in its status; each container gets an even share.
	MaxPodTerminationMessages = 12 << 10
	// fallbackLogLines and fallbackLogBytes bound the log tail that stands
	// in for an empty message under FallbackToLogsOnError.
	fallbackLogLines = 80
	fallbackLogBytes = 2 << 10
)

// policyFallbackToLogsOnError is v1.TerminationMessageFallbackToLogsOnError.
const policyFallbackToLogsOnError = "FallbackToLogsOnError"

// terminationMessage is what an exited container instance left as its
// termination message: the file mounted at its terminationMessagePath or,
// under FallbackToLogsOnError after a failure, the tail of its log when the
// file is empty or missing. Only an instance whose details the runtime
// gave (its mounts, its log path) has one.
func terminationMessage(ctx context.Context, cs *runtime.ContainerStatus) string {
	fallback := cs.TerminationMessagePolicy == policyFallbackToLogsOnError &&
		cs.ExitCode != 0 && cs.Reason != "ContainerCannotRun"
	msg, useLogs := "", fallback
	if cs.TerminationMessageFile != "" {
		data, err := readTail(cs.TerminationMessageFile, MaxTerminationMessage)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return fmt.Sprintf("Error on reading termination log %s: %v", cs.TerminationMessageFile, err)
		default:
			msg, useLogs = string(data), fallback && len(data) == 0
		}
	}
	if useLogs && cs.LogPath != "" {
		return logTail(ctx, cs.LogPath, cs.ID)
	}
	return msg
}

// readTail reads the last limit bytes of the regular file at path. The file
// is written by a container: no symlink anywhere in the path is followed,
// a FIFO or device is refused rather than read (or blocked on), and a huge
// file costs one bounded read.
func readTail(path string, limit int64) ([]byte, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	off := max(fi.Size()-limit, 0)
	return io.ReadAll(io.NewSectionReader(f, off, limit))
}

// logTail is the end of a container's log: its last lines, at most
// fallbackLogBytes of them (the latest).
func logTail(ctx context.Context, path, containerID string) string {
	lines := int64(fallbackLogLines)
	var buf tailBuffer
	buf.max = fallbackLogBytes
	if err := logs.NewReader(nil).ReadLogs(ctx, path, containerID, logs.Options{TailLines: &lines}, &buf, &buf); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return buf.b.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.b.Reset()
		t.b.Write(p[len(p)-t.max:])
		return n, nil
	}
	if over := t.b.Len() + len(p) - t.max; over > 0 {
		t.b.Next(over)
	}
	t.b.Write(p)
	return n, nil
}

// withTerminationMessage adds an exited container's termination message to
// the runtime's own message for it.
func withTerminationMessage(runtimeMsg, msg string) string {
	switch {
	case msg == "":
		return runtimeMsg
	case runtimeMsg == "":
		return msg
	default:
		return runtimeMsg + ": " + msg
	}
}

// terminationMessageFile creates the empty host file a new container
// instance writes its termination message to (mounted at its
// terminationMessagePath), in the pod's directory so that it goes with the
// pod: <root>/pods/<uid>/containers/<name>/<random>. "" without a root dir
// or a path.
func (s *Syncer) terminationMessageFile(pod *v1.Pod, c *v1.Container) (string, error) {
	root := s.opts.Config.RootDir
	if root == "" || c.TerminationMessagePath == "" {
		return "", nil
	}
	if filepath.Base(string(pod.UID)) != string(pod.UID) || filepath.Base(c.Name) != c.Name {
		return "", fmt.Errorf("termination message file: bad pod UID %q or container name %q", pod.UID, c.Name)
	}
	dir := layout.ContainerDir(root, pod.UID, c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	path := filepath.Join(dir, hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	defer f.Close()
	// Any user the container runs as must be able to write it.
	if err := f.Chmod(0o666); err != nil {
		return "", fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	return path, nil
}
