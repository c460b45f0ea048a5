//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// waitFor polls cond every 200 ms until it holds, or fails the test after
// timeout with the last state cond described.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
}
