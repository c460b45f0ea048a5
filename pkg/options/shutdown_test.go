package options

import (
	"testing"
	"time"
)

// Graceful node shutdown's two periods are honoured, without a warning.
func TestShutdownGracePeriodsApplied(t *testing.T) {
	kc, err := DecodeConfig([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := NewFlagSet("nodelet")
	if err := fs.Parse([]string{"--hostname-override", "n1"}); err != nil {
		t.Fatal(err)
	}
	o, warnings, err := Resolve(fs, kc)
	if err != nil {
		t.Fatal(err)
	}
	if o.ShutdownGracePeriod != 30*time.Second || o.ShutdownGracePeriodCriticalPods != 10*time.Second {
		t.Errorf("ShutdownGracePeriod = %v, critical %v, want 30s and 10s", o.ShutdownGracePeriod, o.ShutdownGracePeriodCriticalPods)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
}
