package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/logs"
)

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

// terminationMessage is what an exited container left as its termination
// message: the file mounted at its terminationMessagePath (found through
// the runtime's mount list) or, under FallbackToLogsOnError after a
// failure, the tail of its log when the file is empty or missing.
func terminationMessage(ctx context.Context, st *runtimeapi.ContainerStatus, id ContainerIdentity) string {
	fallback := id.TerminationMessagePolicy == policyFallbackToLogsOnError &&
		st.GetExitCode() != 0 && st.GetReason() != "ContainerCannotRun"
	msg, useLogs := "", fallback
	if id.TerminationMessagePath != "" {
		for _, m := range st.GetMounts() {
			if m.GetContainerPath() != id.TerminationMessagePath {
				continue
			}
			data, err := readTail(m.GetHostPath(), MaxTerminationMessage)
			switch {
			case errors.Is(err, os.ErrNotExist):
			case err != nil:
				return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err)
			default:
				msg, useLogs = string(data), fallback && len(data) == 0
			}
			break
		}
	}
	if useLogs && st.GetLogPath() != "" {
		return logTail(ctx, st.GetLogPath(), st.GetId())
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
