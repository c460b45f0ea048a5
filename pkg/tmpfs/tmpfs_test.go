package tmpfs

import (
	"os"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/nodelet/nodelet/pkg/layout"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		perm os.FileMode
		size int64
		want string
	}{
		{0o755, 0, "mode=755"},
		{0o1777, 0, "mode=777"}, // Go's sticky bit is os.ModeSticky, not 01000
		{0o777 | os.ModeSticky, 0, "mode=1777"},
		{0o750, 64 << 20, "mode=750,size=67108864"},
	} {
		if got := Options(tc.perm, tc.size); got != tc.want {
			t.Errorf("Options(%o, %d) = %q, want %q", tc.perm, tc.size, got, tc.want)
		}
	}
}

func TestUnmountPodWithoutMounts(t *testing.T) {
	root := t.TempDir()
	if err := UnmountPod(root, "nope"); err != nil {
		t.Fatalf("pod without a directory: %v", err)
	}
	if err := os.MkdirAll(layout.VolumeDir(root, "u", layout.PluginSecret, "s"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := UnmountPod(root, "u"); err != nil {
		t.Fatalf("plain directories: %v", err)
	}
	if err := UnmountPlugin(root, "u", layout.PluginSecret); err != nil {
		t.Fatalf("plain directories of the plugin: %v", err)
	}
	if err := UnmountPlugin(root, "u", layout.PluginConfigMap); err != nil {
		t.Fatalf("plugin without a directory: %v", err)
	}
	if m, err := mountinfo.Mounted(root); err != nil || m {
		t.Logf("temp dir is a mount point here (%v, %v)", m, err)
	}
}
