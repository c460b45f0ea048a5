package logs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/poll"
)

func at(sec int) string {
	return time.Date(2026, 12, 2, 10, 0, sec, 0, time.UTC).Format(time.RFC3339Nano)
}

// sample is a log with both streams, a partial line and a malformed one.
var sample = strings.Join([]string{
	at(1) + " stdout F one",
	at(2) + " stderr F two",
	at(3) + " stdout P thr",
	at(3) + " stdout F ee",
	"this line is not CRI",
	at(4) + " stdout F four",
	at(5) + " stderr F five",
}, "\n") + "\n"

func writeLog(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func i64(v int64) *int64 { return &v }

func TestReadLogs(t *testing.T) {
	path := writeLog(t, sample)
	tests := []struct {
		name           string
		opts           Options
		stdout, stderr string
	}{
		{"all", Options{}, "one\nthree\nfour\n", "two\nfive\n"},
		{"tail 2", Options{TailLines: i64(2)}, "four\n", "five\n"},
		{"tail 0", Options{TailLines: i64(0)}, "", ""},
		{"tail more than there is", Options{TailLines: i64(100)}, "one\nthree\nfour\n", "two\nfive\n"},
		{"since", Options{Since: time.Date(2026, 12, 2, 10, 0, 3, 0, time.UTC)}, "three\nfour\n", "five\n"},
		{"limit", Options{LimitBytes: i64(6)}, "one\n", "tw"},
		{"limit exact", Options{LimitBytes: i64(8)}, "one\n", "two\n"},
		{"timestamps", Options{Timestamps: true, TailLines: i64(3)},
			"2026-12-02T10:00:04.000000000Z four\n", "2026-12-02T10:00:05.000000000Z five\n"},
		{"timestamps on a joined line", Options{Timestamps: true, Since: time.Date(2026, 12, 2, 10, 0, 3, 0, time.UTC), LimitBytes: i64(37)},
			"2026-12-02T10:00:03.000000000Z three\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := NewReader(nil).ReadLogs(context.Background(), path, "c1", tc.opts, &out, &errb); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.stdout || errb.String() != tc.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", out.String(), errb.String(), tc.stdout, tc.stderr)
			}
		})
	}
	if err := NewReader(nil).ReadLogs(context.Background(), filepath.Join(t.TempDir(), "missing"), "c1", Options{}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("missing file: no error")
	}

	// Lines written while the log is read are not part of it.
	grow := &appendingWriter{path: path, t: t}
	if err := NewReader(nil).ReadLogs(context.Background(), path, "c1", Options{TailLines: i64(2)}, grow, grow); err != nil {
		t.Fatal(err)
	}
	if got := grow.b.String(); got != "four\nfive\n" {
		t.Errorf("tail 2 of a growing log: %q", got)
	}
}

func TestTailOffset(t *testing.T) {
	tests := []struct {
		content string
		n       int64
		want    string
	}{
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 4, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 2, "b\nc"},
		{"", 3, ""},
		{"\n\n", 1, "\n"},
		{strings.Repeat("x", 70000) + "\n" + strings.Repeat("y", 70000) + "\n", 1, strings.Repeat("y", 70000) + "\n"},
	}
	for _, tc := range tests {
		path := writeLog(t, tc.content)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		off, err := tailOffset(f, int64(len(tc.content)), tc.n)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.content[off:]; got != tc.want {
			t.Errorf("tail %d of %.20q: %.20q, want %.20q", tc.n, tc.content, got, tc.want)
		}
	}
}

// syncBuffer is a buffer a follower writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitChecks waits until the follower asked twice more whether the
// container runs: at least one of the checks came after what the test just
// did, so the follower has seen it.
func waitChecks(t *testing.T, checks *atomic.Int32) {
	t.Helper()
	want := checks.Load() + 2
	poll.Eventually(t, "2 more running checks", func() bool { return checks.Load() >= want })
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

func TestFollowAcrossRotationUntilExit(t *testing.T) {
	path := writeLog(t, at(1)+" stdout F first\n")
	var running atomic.Bool
	var checks atomic.Int32
	running.Store(true)
	rd := NewReader(func(ctx context.Context, id string) (bool, error) {
		if id != "c1" {
			return false, fmt.Errorf("unexpected id %s", id)
		}
		checks.Add(1)
		return running.Load(), nil
	})
	rd.pollInterval = 20 * time.Millisecond

	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- rd.ReadLogs(context.Background(), path, "c1", Options{Follow: true}, &out, &out) }()

	poll.Eventually(t, "first line", func() bool { return out.String() == "first\n" })
	// A line written in two pieces comes out whole.
	appendLine(t, path, at(2)+" stdout F sec")
	appendLine(t, path, "ond\n")
	poll.Eventually(t, "second line", func() bool { return out.String() == "first\nsecond\n" })

	// Rotation: the runtime writes a last line to the old file, the file is
	// moved aside and a new one is opened.
	appendLine(t, path, at(3)+" stdout F last of old\n")
	if err := os.Rename(path, path+".20261202-100003"); err != nil {
		t.Fatal(err)
	}
	waitChecks(t, &checks) // the follower looks while no file is there
	appendLine(t, path, at(4)+" stdout F first of new\n")
	poll.Eventually(t, "lines across rotation", func() bool { return out.String() == "first\nsecond\nlast of old\nfirst of new\n" })

	// The container exits after a final line: it is shown, then the read ends.
	appendLine(t, path, at(5)+" stderr F bye\n")
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end after the container exited")
	}
	if got := out.String(); got != "first\nsecond\nlast of old\nfirst of new\nbye\n" {
		t.Errorf("output %q", got)
	}
}

func TestFollowEndsWithContext(t *testing.T) {
	path := writeLog(t, "")
	rd := NewReader(func(context.Context, string) (bool, error) { return true, nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out syncBuffer
	go func() { done <- rd.ReadLogs(ctx, path, "c1", Options{Follow: true, TailLines: i64(10)}, &out, &out) }()
	appendLine(t, path, at(1)+" stdout F hi\n")
	poll.Eventually(t, "line", func() bool { return out.String() == "hi\n" })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ReadLogs after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}

func TestFollowStopsAtLimit(t *testing.T) {
	path := writeLog(t, at(1)+" stdout F 12345\n")
	rd := NewReader(func(context.Context, string) (bool, error) { return true, nil })
	var out syncBuffer
	err := rd.ReadLogs(context.Background(), path, "c1", Options{Follow: true, LimitBytes: i64(3)}, &out, &out)
	if err != nil || out.String() != "123" {
		t.Errorf("%q %v", out.String(), err)
	}
}

func TestFollowEndsWhenLogRemovedWithContainer(t *testing.T) {
	path := writeLog(t, at(1)+" stdout F hi\n")
	var running atomic.Bool
	var checks atomic.Int32
	running.Store(true)
	rd := NewReader(func(context.Context, string) (bool, error) { checks.Add(1); return running.Load(), nil })
	rd.pollInterval = 10 * time.Millisecond
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- rd.ReadLogs(context.Background(), path, "c1", Options{Follow: true}, &out, &out) }()
	poll.Eventually(t, "line", func() bool { return out.String() == "hi\n" })
	os.Remove(path)
	waitChecks(t, &checks) // the follower waits for the container while its log is gone
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow of a removed log did not end when the container was gone")
	}
}

// appendingWriter appends a log line to path at every write, as a busy
// container would while its log is read.
type appendingWriter struct {
	path string
	t    *testing.T
	b    bytes.Buffer
}

func (a *appendingWriter) Write(p []byte) (int, error) {
	appendLine(a.t, a.path, at(9)+" stdout F written meanwhile\n")
	return a.b.Write(p)
}
