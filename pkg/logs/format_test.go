package logs

import (
	"errors"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	ts := "2026-12-02T10:00:00.123456789Z"
	want := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)
	tests := []struct {
		line    string
		stream  string
		partial bool
		msg     string
		bad     bool
	}{
		{ts + " stdout F hello\n", Stdout, false, "hello\n", false},
		{ts + " stderr F hello", Stderr, false, "hello\n", false},
		{ts + " stdout P hel", Stdout, true, "hel", false},
		{ts + " stdout P hel\n", Stdout, true, "hel", false},
		{ts + " stdout F \n", Stdout, false, "\n", false},
		{ts + " stdout F\n", Stdout, false, "\n", false},
		{ts + " stdout F  two  spaces \n", Stdout, false, " two  spaces \n", false},
		{ts + " stdout legacy line\n", Stdout, false, "legacy line\n", false},
		{"2026-12-02T10:00:00+01:00 stdout F zone\n", Stdout, false, "zone\n", false},
		{"garbage\n", "", false, "", true},
		{"not-a-time stdout F x\n", "", false, "", true},
		{ts + " stdin F x\n", "", false, "", true},
		{ts + "\n", "", false, "", true},
	}
	for _, tc := range tests {
		e, err := ParseLine([]byte(tc.line))
		if tc.bad {
			if !errors.Is(err, errMalformed) {
				t.Errorf("%q: err %v, want malformed", tc.line, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if e.Stream != tc.stream || e.Partial != tc.partial || string(e.Msg) != tc.msg {
			t.Errorf("%q: %+v (msg %q)", tc.line, e, e.Msg)
		}
		if tc.line[:len(ts)] == ts && !e.Time.Equal(want) {
			t.Errorf("%q: time %v", tc.line, e.Time)
		}
	}
}

func TestParseLineDoesNotModifyInput(t *testing.T) {
	buf := []byte("2026-12-02T10:00:00Z stdout F abc" + "XYZ")
	line := buf[:len(buf)-3]
	if _, err := ParseLine(line); err != nil {
		t.Fatal(err)
	}
	if string(buf[len(buf)-3:]) != "XYZ" {
		t.Errorf("ParseLine wrote past its line: %q", buf)
	}
}
