package poll

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recorder catches a Fatalf without ending the test that checks it.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		start := time.Now()
		Eventually(t, "third call", func() bool { return calls.Add(1) == 3 })
		if calls.Load() != 3 {
			t.Errorf("%d calls", calls.Load())
		}
		if d := time.Since(start); d != 2*fastInterval {
			t.Errorf("returned after %s, want two intervals", d)
		}
	})
}

func TestWithinReportsTheLastState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		n := 0
		start := time.Now()
		Within(r, time.Second, "never", func() (bool, string) { n++; return false, "still no" })
		if r.failed == "" || !strings.Contains(r.failed, "still no") {
			t.Errorf("failure %q", r.failed)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("gave up after %s", d)
		}
		if n < 5 {
			t.Errorf("%d calls in a second", n)
		}
	})
}
