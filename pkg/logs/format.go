package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream names in CRI log lines.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// timestampFormat is how timestamps are shown with Options.Timestamps:
// RFC 3339 with a fixed nine-digit fraction, so columns line up.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// errMalformed marks a line that is not in the CRI log format.
var errMalformed = errors.New("malformed CRI log line")

// Entry is one parsed line of a CRI log file.
type Entry struct {
	Time   time.Time
	Stream string
	// Partial is true when the message continues in the next entry of the
	// same stream (tag P); the message then has no trailing newline.
	Partial bool
	// Msg is the message, including its newline for a full line. It points
	// into the parsed buffer.
	Msg []byte
}

// ParseLine parses one line, with or without its trailing newline.
func ParseLine(line []byte) (Entry, error) {
	var e Entry
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return e, fmt.Errorf("%w: no timestamp: %q", errMalformed, clip(line))
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return e, fmt.Errorf("%w: timestamp %q: %v", errMalformed, clip(ts), err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return e, fmt.Errorf("%w: no stream: %q", errMalformed, clip(line))
	}
	e.Time, e.Stream = t, string(stream)
	if e.Stream != Stdout && e.Stream != Stderr {
		return e, fmt.Errorf("%w: unknown stream %q", errMalformed, clip(stream))
	}
	tag, msg, ok := bytes.Cut(rest, []byte{' '})
	switch {
	case ok && string(tag) == "P":
		e.Partial = true
	case ok && string(tag) == "F":
	case string(bytes.TrimSuffix(rest, []byte{'\n'})) == "P" || string(bytes.TrimSuffix(rest, []byte{'\n'})) == "F":
		// An empty message: "<ts> stdout F\n".
		e.Partial = rest[0] == 'P'
		msg = nil
	default:
		// No tag: the format before tags existed. The whole rest is a
		// full line.
		msg = rest
	}
	if e.Partial {
		e.Msg = bytes.TrimSuffix(msg, []byte{'\n'})
		return e, nil
	}
	if len(msg) == 0 || msg[len(msg)-1] != '\n' {
		msg = append(msg[:len(msg):len(msg)], '\n')
	}
	e.Msg = msg
	return e, nil
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
