//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/pkg/shutdown"
)

// TestShutdownGracePeriodReported: graceful node shutdown needs
// systemd-logind; a config that sets shutdownGracePeriod on a host without it
// starts nodelet with a warning that says pods will not be stopped
// gracefully, and nodelet runs on as usual. Where logind runs, nodelet
// takes the delay lock and says so.
func TestShutdownGracePeriodReported(t *testing.T) {
	rt := framework.StartRuntime(t)
	n := framework.NewNodelet(t, rt)
	appendConfig(t, n, "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n")
	n.Start() // waits for healthz: start-up logging is done

	var want []string
	switch err := shutdown.Probe(); {
	case errors.Is(err, shutdown.ErrNoLogind):
		want = append(want, "shutdownGracePeriod (30s) is set, but systemd-logind does not run on this host")
	case err != nil:
		want = append(want, "shutdownGracePeriod (30s) is set, but nodelet could not tell whether systemd-logind runs")
	default:
		want = append(want, "Graceful node shutdown enabled")
	}
	log := n.Log()
	if strings.Contains(log, `"shutdownGracePeriod" is not supported`) {
		t.Errorf("shutdownGracePeriod warned about as unsupported")
	}
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("nodelet log lacks %q", w)
		}
	}
	if code, body, err := n.Readyz(); err != nil || code != 200 {
		t.Errorf("readyz = %d %q, %v", code, body, err)
	}
}
