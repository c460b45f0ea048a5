// Package poll is the one way tests wait for a condition that another
// goroutine or process makes true: it polls the condition and fails the test
// with what was awaited (and the last state seen) when time runs out.
//
// It is for conditions only. A test that needs time to pass uses a fake
// clock (k8s.io/utils/clock/testing) or testing/synctest, and a test that
// checks something did not happen waits for a later event or a
// synchronisation point instead of sleeping. Inside a synctest bubble the
// polling runs on the bubble's fake time, so it costs no wall-clock time.
package poll

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// DefaultTimeout bounds Eventually: far above what an in-process
	// condition needs, so that only a real hang fails, even under -race on
	// a loaded machine.
	DefaultTimeout = 10 * time.Second
	// fastInterval is the period of Eventually: in-process state is cheap
	// to read.
	fastInterval = 5 * time.Millisecond
	// slowInterval is the period of Within: its conditions ask a process or
	// an API server.
	slowInterval = 200 * time.Millisecond
)

// Eventually fails t unless cond holds within DefaultTimeout. It must be
// called from the test's goroutine.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	until(t, DefaultTimeout, fastInterval, what, func() (bool, string) { return cond(), "" })
}

// Within fails t unless cond holds within timeout, checking every 200 ms;
// cond describes the state it saw, which the failure reports. It is for
// conditions that ask another process (the e2e tests).
func Within(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	until(t, timeout, slowInterval, what, cond)
}

// Until is Within at a chosen interval: for a test that measures how soon
// something happens, or a condition too costly to check often.
func Until(t testing.TB, timeout, interval time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	until(t, timeout, interval, what, cond)
}

func until(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err == nil {
		return
	}
	if last == "" {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	} else {
		t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	}
}
