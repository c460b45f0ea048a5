package logs

import (
	"bytes"
	"io"

	"k8s.io/klog/v2"
)

// writer turns parsed entries into output: it filters by time, adds
// timestamps, joins partial lines and enforces the byte limit across both
// streams.
type writer struct {
	opts   Options
	out    map[string]io.Writer
	limit  int64 // bytes left; < 0: no limit
	inLine map[string]bool
}

func newWriter(opts Options, stdout, stderr io.Writer) *writer {
	w := &writer{
		opts:   opts,
		out:    map[string]io.Writer{Stdout: stdout, Stderr: stderr},
		limit:  -1,
		inLine: map[string]bool{},
	}
	if opts.LimitBytes != nil {
		w.limit = max(*opts.LimitBytes, 0)
	}
	return w
}

// writeChunk writes every line of chunk; the last may lack its newline.
func (w *writer) writeChunk(chunk []byte) error {
	for len(chunk) > 0 {
		line, rest, found := bytes.Cut(chunk, []byte{'\n'})
		if found {
			line = chunk[:len(line)+1]
		}
		if err := w.writeLine(line); err != nil {
			return err
		}
		chunk = rest
	}
	return nil
}

// writeLine writes one CRI log line. Malformed lines are skipped: one bad
// line must not cut a log short.
func (w *writer) writeLine(line []byte) error {
	if w.limit == 0 {
		return errLimit
	}
	e, err := ParseLine(line)
	if err != nil {
		klog.V(4).InfoS("Skipping log line", "err", err)
		return nil
	}
	if !w.opts.Since.IsZero() && e.Time.Before(w.opts.Since) {
		return nil
	}
	out := w.out[e.Stream]
	if out == nil {
		return nil
	}
	msg := e.Msg
	if w.opts.Timestamps && !w.inLine[e.Stream] {
		msg = append([]byte(e.Time.Format(timestampFormat)+" "), msg...)
	}
	w.inLine[e.Stream] = e.Partial
	return w.write(out, msg)
}

func (w *writer) write(out io.Writer, msg []byte) error {
	if w.limit >= 0 && int64(len(msg)) >= w.limit {
		msg = msg[:w.limit]
		w.limit = 0
		if _, err := out.Write(msg); err != nil {
			return err
		}
		return errLimit
	}
	if w.limit > 0 {
		w.limit -= int64(len(msg))
	}
	_, err := out.Write(msg)
	return err
}
