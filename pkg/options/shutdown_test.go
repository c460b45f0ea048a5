package options

import (
	"strings"
	"testing"
	"time"
)

// The shutdown grace period is warned about as ignored, yet kept, so that
// start-up can say what this host would need to honour it.
func TestShutdownGracePeriodKeptButWarned(t *testing.T) {
	kc, err := DecodeConfig([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 30s\n"))
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
	if o.ShutdownGracePeriod != 30*time.Second {
		t.Errorf("ShutdownGracePeriod = %v, want 30s", o.ShutdownGracePeriod)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"shutdownGracePeriod" is not supported`) {
		t.Errorf("warnings = %q", warnings)
	}
}
