//go:build e2e

package framework

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestStartRuntime checks the fixture's contract: a runtime with both images, images made on the
// fly visible with their size, and nothing left running or mounted once the test is over.
func TestStartRuntime(t *testing.T) {
	if os.Getenv("NODELET_E2E_RUNTIME_DIR") != "" {
		t.Skip("NODELET_E2E_RUNTIME_DIR reuses a runtime; this test is about starting and stopping one")
	}
	var rt *Runtime
	var containerdPid int
	t.Run("up", func(t *testing.T) {
		rt = StartRuntime(t)
		if !strings.HasPrefix(rt.Endpoint, "unix:///tmp/") || rt.Socket != strings.TrimPrefix(rt.Endpoint, "unix://") {
			t.Errorf("endpoint %q, socket %q", rt.Endpoint, rt.Socket)
		}
		b, err := os.ReadFile(rt.StateDir + "/containerd.pid")
		if err != nil {
			t.Fatal(err)
		}
		containerdPid, _ = strconv.Atoi(strings.TrimSpace(string(b)))

		out, err := rt.Ctr("images", "ls", "-q")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"registry.k8s.io/pause:3.10", "docker.io/library/busybox:1.35"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("image %s not imported; have:\n%s", want, out)
			}
		}

		summary, err := rt.MakeImage("--name", "example.com/nodelet/filler:1", "--filler-bytes", "65536")
		if err != nil {
			t.Fatal(err)
		}
		var res struct{ LayerSize int64 }
		if err := json.Unmarshal([]byte(summary), &res); err != nil || res.LayerSize < 65536 {
			t.Errorf("mkimage summary %q: %v", summary, err)
		}
		if out, err := rt.Ctr("images", "ls", "-q"); err != nil || !strings.Contains(out, "example.com/nodelet/filler:1") {
			t.Errorf("made image not listed (%v):\n%s", err, out)
		}
	})
	if rt == nil || t.Failed() {
		return
	}
	// The subtest's cleanups have run: containerd must be gone, and the state dir with it.
	if containerdPid > 0 {
		if err := syscall.Kill(containerdPid, 0); err == nil && !runtimeIsZombie(containerdPid) {
			t.Errorf("containerd pid %d still running after cleanup", containerdPid)
		}
	}
	if _, err := os.Stat(rt.StateDir); !os.IsNotExist(err) {
		t.Errorf("state dir %s still there after cleanup (err %v)", rt.StateDir, err)
	}
}

func runtimeIsZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	return err == nil && strings.Contains(string(b), "(zombie)")
}

func TestRequireRealPartsNil(t *testing.T) {
	RequireRealParts(t, "nothing", nil) // must neither skip nor fail
	if t.Skipped() || t.Failed() {
		t.Fatal("RequireRealParts acted on a nil error")
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	b, err := os.ReadFile(root + "/go.mod")
	if err != nil || !runtimeIsNodeletMod(b) {
		t.Fatalf("RepoRoot() = %s: not the nodelet module (%v)", root, err)
	}
}

func TestRuntimeOwnerID(t *testing.T) {
	me := OwnerID(os.Getpid())
	if !strings.HasPrefix(me, strconv.Itoa(os.Getpid())+" ") || me == strconv.Itoa(os.Getpid())+" " {
		t.Errorf("OwnerID(self) = %q", me)
	}
	if got := OwnerID(1 << 30); got != "" {
		t.Errorf("OwnerID(no such pid) = %q, want empty", got)
	}
}
