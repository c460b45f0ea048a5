package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseLine: a CRI log line is written by the runtime but carries the
// container's bytes, so any line parses to an entry or a malformed-line
// error, never a panic, and a parsed entry keeps the format's promises.
//
//	go test ./pkg/logs -run '^$' -fuzz FuzzParseLine -fuzztime 60s
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
		"2016-10-06T00:17:09.669794203Z stderr P partial",
		"2016-10-06T00:17:09.669794203Z stdout F\n",
		"2016-10-06T00:17:09Z stdout no tag\n",
		"2016-10-06T00:17:09.669794203+02:00 stdout P \n",
		"garbage", " ", "2016-10-06T00:17:09Z", "2016-10-06T00:17:09Z stdin F x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if e.Stream != Stdout && e.Stream != Stderr {
			t.Fatalf("stream %q accepted", e.Stream)
		}
		// The reader hands over one line at a time: a newline inside the
		// line cannot reach the parser, so the promises below need none.
		if bytes.Contains(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\n'}) {
			return
		}
		if e.Partial && bytes.HasSuffix(e.Msg, []byte{'\n'}) {
			t.Fatalf("partial message %q ends with a newline", e.Msg)
		}
		if !e.Partial && !bytes.HasSuffix(e.Msg, []byte{'\n'}) {
			t.Fatalf("full message %q has no newline", e.Msg)
		}
	})
}

// FuzzReadLogs reads arbitrary log file content with kubectl logs' options
// (tail, limit, since, timestamps): an error or output, never a panic, and
// never more output than the byte limit allows.
//
//	go test ./pkg/logs -run '^$' -fuzz FuzzReadLogs -fuzztime 60s
func FuzzReadLogs(f *testing.F) {
	content := "2016-10-06T00:17:09.669794202Z stdout F one\n" +
		"2016-10-06T00:17:10.669794202Z stderr P par\n" +
		"2016-10-06T00:17:10.669794203Z stderr F tial\n" +
		"not a log line\n" +
		"2016-10-06T00:17:11Z stdout F three"
	f.Add([]byte(content), int64(2), int64(-1), int64(0), true)
	f.Add([]byte(content), int64(-1), int64(5), int64(1475713030), false)
	f.Add([]byte(content), int64(0), int64(0), int64(0), false)
	f.Add([]byte("\n\n\n"), int64(100), int64(1), int64(-5), true)
	rd := NewReader(func(context.Context, string) (bool, error) { return false, nil })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, tail, limit, since int64, timestamps bool) {
		path := filepath.Join(dir, "0.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := Options{Timestamps: timestamps}
		if tail >= 0 {
			opts.TailLines = &tail
		}
		if limit >= 0 {
			opts.LimitBytes = &limit
		}
		if since != 0 {
			opts.Since = time.Unix(since, 0)
		}
		var stdout, stderr bytes.Buffer
		err := rd.ReadLogs(context.Background(), path, "id", opts, &stdout, &stderr)
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
		if got := int64(stdout.Len() + stderr.Len()); opts.LimitBytes != nil && got > limit {
			t.Fatalf("wrote %d bytes with a limit of %d", got, limit)
		}
	})
}
