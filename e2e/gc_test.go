//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/e2e/framework"
	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/gc"
	"github.com/nodelet/nodelet/pkg/images"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

const (
	gcFsSize       = 512 << 20 // the loop-mounted filesystem containerd's root lives on
	gcPauseImage   = "registry.k8s.io/pause:3.10"
	gcPodImage     = "example.com/gc-pod:1"    // used by a running container
	gcExitedImage  = "example.com/gc-exited:1" // used by an exited container
	gcFillerPrefix = "example.com/gc-fill:"
	gcDirPattern   = "nlgc-" // short: containerd's socket lives in the state dir
)

// TestGC runs image and container garbage collection against a real containerd whose root (content
// store and snapshots) sits on a small dedicated ext4 filesystem, loop-mounted for this test only.
func TestGC(t *testing.T) {
	env := gcSetup(t)
	t.Run("ImageGC", func(t *testing.T) { gcTestImages(t, env) })
	t.Run("ContainerGC", func(t *testing.T) { gcTestContainers(t, env) })
}

type gcEnv struct {
	rt      *framework.Runtime
	rs      runtimeapi.RuntimeServiceClient
	is      runtimeapi.ImageServiceClient
	client  *cri.Client // what nodelet's garbage collectors are wired to
	rootDir string      // containerd's root: the loop-mounted filesystem
	// The running pod whose image GC must keep.
	podUID       string
	podContainer string
}

func gcSetup(t *testing.T) *gcEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		framework.RequireRealParts(t, "root (loop mounts, containerd)", errors.New("not root"))
	}
	for _, cmd := range []string{"containerd", "ctr", "runc", "mkfs.ext4", "losetup", "mount", "umount", "truncate"} {
		if _, err := exec.LookPath(cmd); err != nil {
			framework.RequireRealParts(t, cmd, err)
		}
	}
	repo := framework.RepoRoot()
	gcSweepStale(t, repo)

	dir, err := os.MkdirTemp("/tmp", gcDirPattern)
	if err != nil {
		t.Fatal(err)
	}
	// Owner pid, so a later run can tear this down if this process dies without its cleanups.
	if err := os.WriteFile(filepath.Join(dir, "gc-owner"), []byte(framework.OwnerID(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "disk.img") // on /tmp's filesystem, beside the mount point
	root := filepath.Join(dir, "root")
	// Cleanups run last-registered first: runtime-down, then the loop filesystem, then the dir.
	var loopDev string
	t.Cleanup(func() {
		gcTeardownLoop(t, root, img, loopDev)
		os.RemoveAll(dir)
	})
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	gcRun(t, "truncate", "-s", fmt.Sprint(gcFsSize), img)
	// -m 0: no blocks reserved for root, so "available" is capacity minus what is written.
	gcRun(t, "mkfs.ext4", "-q", "-F", "-m", "0", img)
	gcRun(t, "mount", "-o", "loop", img, root)
	if out, err := exec.Command("findmnt", "-n", "-o", "SOURCE", root).Output(); err == nil {
		loopDev = strings.TrimSpace(string(out))
	}
	t.Logf("loop filesystem %s (%s) mounted on %s", img, loopDev, root)

	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "containerd.log")); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("last lines of containerd.log:\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
		out, err := exec.Command("bash", filepath.Join(repo, "hack", "runtime-down.sh"), "--purge", dir).CombinedOutput()
		if err != nil {
			t.Errorf("runtime-down: %v\n%s", err, out)
		}
	})
	out, err := exec.Command("bash", filepath.Join(repo, "hack", "runtime-up.sh"), dir).CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			framework.RequireRealParts(t, "containerd runtime", fmt.Errorf("%v\n%s", err, out))
		}
		t.Fatalf("runtime-up: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "containerd.sock")
	rt := &framework.Runtime{Endpoint: "unix://" + sock, StateDir: dir, Socket: sock}

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client, err := cri.Dial(context.Background(), "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	env := &gcEnv{rt: rt, rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn), client: client, rootDir: root}

	// An image that runs: static busybox plus filler, so it weighs on the filesystem.
	podRoot := filepath.Join(dir, "pod-root")
	if err := os.MkdirAll(filepath.Join(podRoot, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bb, err := filepath.EvalSymlinks("/bin/busybox")
	if err != nil {
		framework.RequireRealParts(t, "static busybox", err)
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(podRoot, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep", "true", "echo"} {
		if err := os.Symlink("busybox", filepath.Join(podRoot, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	for _, spec := range []struct {
		name   string
		filler int
	}{{gcPodImage, 48 << 20}, {gcExitedImage, 16 << 20}} {
		if _, err := rt.MakeImage("--name", spec.name, "--root", podRoot, "--filler-bytes", fmt.Sprint(spec.filler), "--cmd", `["sh"]`); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func gcTestImages(t *testing.T, env *gcEnv) {
	ctx := context.Background()
	statfsRoot := func() images.FsUsage {
		var st syscall.Statfs_t
		if err := syscall.Statfs(env.rootDir, &st); err != nil {
			t.Fatal(err)
		}
		return images.FsUsage{Capacity: st.Blocks * uint64(st.Bsize), Available: st.Bavail * uint64(st.Bsize)}
	}

	// A running pod on the pod image, and an exited container of another image.
	env.podUID = "gc-e2e-running"
	sb := gcRunSandbox(t, env, "running", env.podUID)
	env.podContainer = gcStartContainer(t, env, sb, env.podUID, "main", 0, gcPodImage, []string{"sleep", "3600"})
	exited := gcStartContainer(t, env, sb, env.podUID, "once", 0, gcExitedImage, []string{"true"})
	gcWaitExited(t, env, exited)

	// Fill the filesystem past 90 % with distinct images. Each import writes the layer twice (content
	// store blob + unpacked snapshot) and, while importing, a third time (ingest), so size them to fit.
	u := statfsRoot()
	t.Logf("after setup: %d of %d bytes used (%.1f%%)", u.Used(), u.Capacity, u.Percent())
	fillers := 0
	for i := 0; i < 200 && u.Percent() < 91; i++ {
		target := u.Capacity / 100 * 94
		filler := min(uint64(32<<20), (target-min(target, u.Used()))/2)
		if filler < 256<<10 {
			break
		}
		name := fmt.Sprintf("%s%d", gcFillerPrefix, i)
		if _, err := env.rt.MakeImage("--name", name, "--filler-bytes", fmt.Sprint(filler)); err != nil {
			t.Fatalf("filling: %v", err)
		}
		fillers++
		u = statfsRoot()
	}
	imgsBefore := gcListImages(t, env)
	t.Logf("filled with %d filler images: %d of %d bytes used (%.1f%%), %d images", fillers, u.Used(), u.Capacity, u.Percent(), len(imgsBefore))
	if u.Percent() < 90 {
		t.Fatalf("could not fill the filesystem past 90%%: %.1f%%", u.Percent())
	}

	rec := record.NewFakeRecorder(20)
	reg := prometheus.NewRegistry()
	rt := env.client
	m, err := images.NewManager(images.Config{
		Runtime:      rt,
		Policy:       images.Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MinAge: 0},
		SandboxImage: gcPauseImage,
		Recorder:     rec,
		NodeRef:      &v1.ObjectReference{Kind: "Node", Name: "gc-e2e"},
		Registerer:   reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := m.GarbageCollect(ctx)
	if err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	after := statfsRoot()
	t.Logf("image GC 90/80: usage %.1f%% -> %.1f%% (statfs now %.1f%%, %d -> %d bytes used of %d); removed %d images, %d bytes by the runtime's sizes, in %v",
		res.Before.Percent(), res.After.Percent(), after.Percent(), res.Before.Used(), after.Used(), after.Capacity,
		len(res.Removed), res.BytesFreed, time.Since(start).Round(time.Millisecond))
	if !res.Triggered || len(res.Removed) == 0 {
		t.Errorf("pass not triggered or removed nothing: %+v", res)
	}
	if after.Percent() >= 80 {
		t.Errorf("usage after GC %.1f%%, want < 80%%", after.Percent())
	}
	if m.DiskPressure() {
		t.Errorf("DiskPressure still true")
	}
	fsInfo, err := rt.ImageFsInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CRI ImageFsInfo after: mountpoint %s, images use %d bytes", fsInfo.GetImageFilesystems()[0].GetFsId().GetMountpoint(), fsInfo.GetImageFilesystems()[0].GetUsedBytes().GetValue())
	gcRequireImages(t, env, gcPauseImage, gcPodImage, gcExitedImage)
	select {
	case e := <-rec.Events:
		t.Errorf("unexpected event %q", e)
	default:
	}
	gcCheckMetrics(t, reg, len(res.Removed))

	// A threshold no amount of removal can reach: everything eligible goes, what pods use stays, and
	// the failure is reported.
	m2, err := images.NewManager(images.Config{
		Runtime:      rt,
		Policy:       images.Policy{HighThresholdPercent: 1, LowThresholdPercent: 0},
		SandboxImage: gcPauseImage,
		Recorder:     rec,
		NodeRef:      &v1.ObjectReference{Kind: "Node", Name: "gc-e2e"},
	})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := m2.GarbageCollect(ctx)
	if !errors.Is(err, images.ErrLowThresholdNotReached) {
		t.Errorf("unreachable threshold: err = %v, want ErrLowThresholdNotReached", err)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning FreeDiskSpaceFailed ") {
			t.Errorf("event %q, want FreeDiskSpaceFailed", e)
		}
		t.Logf("event: %s", e)
	default:
		t.Errorf("no FreeDiskSpaceFailed event")
	}
	left := gcListImages(t, env)
	t.Logf("image GC 1/0: removed %d more; %d images left: %v; usage %.1f%%", len(res2.Removed), len(left), left, statfsRoot().Percent())
	gcRequireImages(t, env, gcPauseImage, gcPodImage, gcExitedImage)
	if len(left) != 3 {
		t.Errorf("images left %v, want exactly pause, pod and exited-container images", left)
	}
	st, err := env.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: env.podContainer})
	if err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("running pod's container: %v %v", st.GetStatus().GetState(), err)
	}
}

func gcTestContainers(t *testing.T, env *gcEnv) {
	ctx := context.Background()
	const uid = "gc-e2e-dead"
	sb := gcRunSandbox(t, env, "dead", uid)
	logDir := filepath.Join(env.rt.StateDir, "pods", "default_dead_"+uid)
	ids := map[string]string{}
	for _, c := range []struct {
		name    string
		attempt uint32
	}{{"app", 0}, {"app", 1}, {"app", 2}, {"side", 0}, {"side", 1}} {
		id := gcStartContainer(t, env, sb, uid, c.name, c.attempt, gcPodImage, []string{"echo", "bye"})
		gcWaitExited(t, env, id)
		ids[fmt.Sprintf("%s/%d", c.name, c.attempt)] = id
	}
	for k := range ids {
		if _, err := os.Stat(filepath.Join(logDir, k+".log")); err != nil {
			t.Fatalf("log of %s: %v", k, err)
		}
	}
	reg := prometheus.NewRegistry()
	cgc, err := gc.New(gc.Config{Runtime: env.client, Policy: gc.DefaultPolicy(),
		PodLogsDir: filepath.Join(env.rt.StateDir, "pods"), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	allWanted := func(types.UID) bool { return true }
	res, err := cgc.GarbageCollect(ctx, allWanted)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("container GC (pod wanted): removed %d containers, %d sandboxes", len(res.Containers), len(res.Sandboxes))
	existing := gcContainerIDs(t, env)
	for k, id := range ids {
		keep := k == "app/2" || k == "side/1"
		if existing[id] != keep {
			t.Errorf("%s (%s): exists %v, want %v", k, id, existing[id], keep)
		}
		_, err := os.Stat(filepath.Join(logDir, k+".log"))
		if (err == nil) != keep {
			t.Errorf("log of %s: exists %v, want %v", k, err == nil, keep)
		}
	}
	if !existing[env.podContainer] {
		t.Errorf("running container of the other pod removed")
	}

	// The pod goes away: stop its sandbox, and GC removes its last dead containers, the sandbox and
	// its log directory.
	if _, err := env.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	res, err = cgc.GarbageCollect(ctx, func(u types.UID) bool { return u != uid })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("container GC (pod removed): removed %d containers, %d sandboxes, log dirs %v", len(res.Containers), len(res.Sandboxes), res.LogDirs)
	existing = gcContainerIDs(t, env)
	for k, id := range ids {
		if existing[id] {
			t.Errorf("%s of the removed pod still exists", k)
		}
	}
	sbs, err := env.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sbs.GetItems() {
		if s.GetId() == sb {
			t.Errorf("sandbox of the removed pod still exists")
		}
	}
	if _, err := os.Stat(logDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log dir of the removed pod: %v", err)
	}
	if !existing[env.podContainer] {
		t.Errorf("running container of the other pod removed")
	}
}

// ---- helpers ----------------------------------------------------------------------------------------

func gcRunSandbox(t *testing.T, env *gcEnv, name, uid string) string {
	t.Helper()
	logDir := filepath.Join(env.rt.StateDir, "pods", "default_"+name+"_"+uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	resp, err := env.rs.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		LogDirectory: logDir,
		Labels:       map[string]string{"io.kubernetes.pod.uid": uid, "io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}})
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	return resp.GetPodSandboxId()
}

func gcStartContainer(t *testing.T, env *gcEnv, sandboxID, uid, name string, attempt uint32, image string, cmd []string) string {
	t.Helper()
	ctx := context.Background()
	st, err := env.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
	if err != nil {
		t.Fatal(err)
	}
	sbMeta := st.GetStatus().GetMetadata()
	resp, err := env.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Command:  append([]string{"/bin/busybox"}, cmd...),
			LogPath:  fmt.Sprintf("%s/%d.log", name, attempt),
			Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelContainerName: name},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		},
		SandboxConfig: &runtimeapi.PodSandboxConfig{
			Metadata:     sbMeta,
			LogDirectory: filepath.Join(env.rt.StateDir, "pods", fmt.Sprintf("%s_%s_%s", sbMeta.GetNamespace(), sbMeta.GetName(), sbMeta.GetUid())),
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer %s/%d: %v", name, attempt, err)
	}
	if _, err := env.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()}); err != nil {
		t.Fatalf("StartContainer %s/%d: %v", name, attempt, err)
	}
	return resp.GetContainerId()
}

func gcWaitExited(t *testing.T, env *gcEnv, id string) {
	t.Helper()
	poll.Until(t, 30*time.Second, 50*time.Millisecond, "container "+id+" to exit", func() (bool, string) {
		st, err := env.rs.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED, st.GetStatus().GetState().String()
	})
}

func gcListImages(t *testing.T, env *gcEnv) []string {
	t.Helper()
	resp, err := env.is.ListImages(context.Background(), &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, img := range resp.GetImages() {
		out = append(out, strings.Join(img.GetRepoTags(), "+"))
	}
	return out
}

func gcRequireImages(t *testing.T, env *gcEnv, names ...string) {
	t.Helper()
	left := gcListImages(t, env)
	have := map[string]bool{}
	for _, tags := range left {
		for _, tag := range strings.Split(tags, "+") {
			have[tag] = true
		}
	}
	for _, n := range names {
		if !have[n] {
			t.Errorf("image %s was removed (left: %v)", n, left)
		}
	}
}

func gcContainerIDs(t *testing.T, env *gcEnv) map[string]bool {
	t.Helper()
	resp, err := env.rs.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range resp.GetContainers() {
		out[c.GetId()] = true
	}
	return out
}

func gcCheckMetrics(t *testing.T, reg *prometheus.Registry, removed int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[mf.GetName()] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[mf.GetName()] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if got["nodelet_image_gc_images_removed_total"] != float64(removed) || got["nodelet_image_gc_bytes_freed_total"] <= 0 || got["nodelet_image_gc_duration_seconds"] != 1 {
		t.Errorf("metrics: %v", got)
	}
}

func gcRun(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// gcTeardownLoop unmounts the filesystem (runtime-down usually did already) and detaches dev and
// every loop device still backed by img, then deletes img.
func gcTeardownLoop(t testing.TB, mountpoint, img, dev string) {
	if gcMounted(mountpoint) {
		if out, err := exec.Command("umount", mountpoint).CombinedOutput(); err != nil {
			if out2, err2 := exec.Command("umount", "-l", mountpoint).CombinedOutput(); err2 != nil {
				t.Errorf("umount %s: %v %s / %v %s", mountpoint, err, out, err2, out2)
			}
		}
	}
	devs := map[string]bool{}
	if strings.HasPrefix(dev, "/dev/loop") {
		// Mounted with -o loop, the device detaches itself on unmount (autoclear); check it is
		// gone, or still ours (backing file img, possibly deleted by runtime-down --purge).
		backing, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(backing)), img) {
			devs[dev] = true
		}
	}
	if out, err := exec.Command("losetup", "-j", img).Output(); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if d, _, ok := strings.Cut(line, ":"); ok && d != "" {
				devs[d] = true
			}
		}
	}
	for d := range devs {
		if out, err := exec.Command("losetup", "-d", d).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v %s", d, err, out)
		}
	}
	os.Remove(img)
}

func gcMounted(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// gcSweepStale tears down what a previous run of this test left when its process died without
// running cleanups (killed by go test -timeout, say): runtime, loop mount, loop device, directory.
func gcSweepStale(t *testing.T, repo string) {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", gcDirPattern+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "gc-owner"))
		if err != nil {
			continue
		}
		owner := strings.TrimSpace(string(b))
		pid, _, _ := strings.Cut(owner, " ")
		var n int
		if _, err := fmt.Sscan(pid, &n); err != nil || framework.OwnerID(n) == owner {
			continue // owner alive
		}
		t.Logf("tearing down stale %s", dir)
		_ = exec.Command("bash", filepath.Join(repo, "hack", "runtime-down.sh"), "--purge", dir).Run()
		gcTeardownLoop(t, filepath.Join(dir, "root"), filepath.Join(dir, "disk.img"), "")
		os.RemoveAll(dir)
	}
}
