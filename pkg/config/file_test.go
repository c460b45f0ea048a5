package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/poll"
	"github.com/nodelet/nodelet/pkg/pod"
)

// recorder is a Reporter that remembers what it was told.
type recorder struct {
	mu   sync.Mutex
	errs []string // "location: error"
}

func (r *recorder) ManifestError(source, location string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, location+": "+err.Error())
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// waitReports waits until n problems have been reported and returns them.
func (r *recorder) waitReports(t *testing.T, n int) []string {
	t.Helper()
	poll.Eventually(t, fmt.Sprintf("%d reports", n), func() bool { return len(r.list()) >= n })
	return r.list()
}

func podYAML(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: app\n    image: %s\n", name, image)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newTestFileSource returns a source with fast retries; its output channel
// is buffered so a test can look at one update at a time.
func newTestFileSource(path string, period time.Duration, mods ...func(*FileSource)) (*FileSource, chan PodUpdate, *recorder) {
	out := make(chan PodUpdate, 100)
	rec := &recorder{}
	s := NewFileSource(path, "node-1", period, out, WithReporter(rec))
	s.retryDelay = 50 * time.Millisecond
	for _, m := range mods {
		m(s)
	}
	return s, out, rec
}

func runFileSource(t *testing.T, path string, period time.Duration, mods ...func(*FileSource)) (<-chan PodUpdate, *recorder) {
	t.Helper()
	s, out, rec := newTestFileSource(path, period, mods...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out, rec
}

// expectSet reads the next update and checks it is a file SET of the named
// static pods (manifest names, without the node suffix).
func expectSet(t *testing.T, out <-chan PodUpdate, names ...string) []*v1.Pod {
	t.Helper()
	u := next(t, out)
	if u.Op != SET || u.Source != pod.FileSource {
		t.Fatalf("got %v from %q, want SET from file", u.Op, u.Source)
	}
	got := []string{}
	for _, p := range u.Pods {
		got = append(got, strings.TrimSuffix(p.Name, "-node-1"))
	}
	slices.Sort(got)
	if names == nil {
		names = []string{}
	}
	if !reflect.DeepEqual(got, names) {
		t.Fatalf("SET of %v, want %v", got, names)
	}
	return u.Pods
}

// The period is long in these tests: changes must arrive through inotify.
const noPoll = time.Hour

func TestFileSourceEmptyDir(t *testing.T) {
	out, _ := runFileSource(t, t.TempDir(), noPoll)
	expectSet(t, out)
	expectNone(t, out)
}

func TestFileSourceAddEditRemove(t *testing.T) {
	dir := t.TempDir()
	out, rec := runFileSource(t, dir, noPoll)
	expectSet(t, out)

	start := time.Now()
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "busybox:1.35"))
	first := expectSet(t, out, "web")
	if d := time.Since(start); d > time.Second {
		t.Errorf("ADD took %v", d)
	}
	p := first[0]
	if p.Namespace != "default" || p.Spec.NodeName != "node-1" || p.Annotations[pod.ConfigSourceAnnotationKey] != "file" {
		t.Errorf("pod not prepared as a static pod: %s/%s node %q annotations %v", p.Namespace, p.Name, p.Spec.NodeName, p.Annotations)
	}

	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "busybox:1.36"))
	edited := expectSet(t, out, "web")
	// An edit keeps the pod's identity and changes its config hash.
	if edited[0].UID != first[0].UID || edited[0].Annotations[pod.ConfigHashAnnotationKey] == first[0].Annotations[pod.ConfigHashAnnotationKey] {
		t.Error("edited manifest: want same UID, new config hash")
	}
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	expectSet(t, out)
	expectNone(t, out)
	if got := rec.list(); len(got) != 0 {
		t.Errorf("unexpected reports: %q", got)
	}
}

func TestFileSourceIgnoresNonManifests(t *testing.T) {
	dir := t.TempDir()
	good := podYAML("x", "busybox:1.35")
	for _, name := range []string{".hidden.yaml", "web.yaml.swp", ".web.yaml.swp", "web.yaml~", "web.yaml.backup", "#web.yaml#", "README", "4913"} {
		write(t, filepath.Join(dir, name), podYAML(strings.NewReplacer(".", "", "~", "", "#", "").Replace(strings.ToLower(name)), "busybox:1.35"))
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.yml"), strings.Replace(good, "name: x", "name: b", 1))
	write(t, filepath.Join(dir, "c.JSON"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},"spec":{"containers":[{"name":"a","image":"busybox:1.35"}]}}`)

	out, rec := runFileSource(t, dir, noPoll)
	expectSet(t, out, "b", "c")
	// An editor working in the directory does not disturb anything.
	write(t, filepath.Join(dir, ".b.yml.swp"), "garbage")
	write(t, filepath.Join(dir, "b.yml~"), "garbage")
	expectNone(t, out)
	if got := rec.list(); len(got) != 0 {
		t.Errorf("unexpected reports: %q", got)
	}
}

func TestFileSourceBadFileBesideGood(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good.yaml"), podYAML("good", "busybox:1.35"))
	write(t, filepath.Join(dir, "bad.yaml"), "apiVersion: apps/v1\nkind: Deployment\n")
	write(t, filepath.Join(dir, "invalid.yaml"), podYAML("Invalid_Name", "busybox:1.35"))

	// A short period: the broken files are re-read often, yet reported once.
	out, rec := runFileSource(t, dir, 20*time.Millisecond)
	expectSet(t, out, "good")
	reports := rec.waitReports(t, 2)
	// A third broken file: the sync that reports it re-reads the first two,
	// as every periodic sync before it did, and does not report them again.
	write(t, filepath.Join(dir, "later.yaml"), "kind: Pod\n")
	if got := rec.waitReports(t, 3); len(got) != 3 || !strings.Contains(got[2], "later.yaml: ") {
		t.Fatalf("reports = %q, want the first two once, then later.yaml", got)
	}
	if err := os.Remove(filepath.Join(dir, "later.yaml")); err != nil {
		t.Fatal(err)
	}
	slices.Sort(reports)
	if want := filepath.Join(dir, "bad.yaml") + `: kind "Deployment" is not supported in a pod manifest, want Pod`; reports[0] != want {
		t.Errorf("report = %q, want %q", reports[0], want)
	}
	if !strings.Contains(reports[1], "invalid.yaml: ") || !strings.Contains(reports[1], `metadata.name: Invalid value: "Invalid_Name-node-1"`) {
		t.Errorf("report = %q, want a field error for invalid.yaml", reports[1])
	}

	// A different broken content is a new problem, reported once more.
	write(t, filepath.Join(dir, "bad.yaml"), "kind: Pod\n")
	if got := rec.waitReports(t, 4); !strings.Contains(got[3], "bad.yaml: Pod manifest has no apiVersion") {
		t.Errorf("report = %q", got[3])
	}
	expectNone(t, out)
}

func TestFileSourceKeepsLastGoodPod(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write(t, path, podYAML("web", "busybox:1.35"))
	out, rec := runFileSource(t, dir, noPoll)
	running := expectSet(t, out, "web")

	write(t, path, podYAML("web", "busybox:1.35")+"  - name: app\n    image: busybox:1.35\n")
	got := rec.waitReports(t, 1)
	if !strings.Contains(got[0], `spec.containers[1].name: Duplicate value: "app"`) || !strings.Contains(got[0], "keeping pod default/web-node-1") {
		t.Errorf("report = %q", got[0])
	}
	expectNone(t, out) // the running pod stays

	write(t, path, podYAML("web", "busybox:1.36"))
	fixed := expectSet(t, out, "web")
	if fixed[0].Annotations[pod.ConfigHashAnnotationKey] == running[0].Annotations[pod.ConfigHashAnnotationKey] {
		t.Error("fixed manifest has the old config hash")
	}
}

// A file caught mid-write is retried before anything is reported, and is
// picked up once complete.
func TestFileSourceHalfWritten(t *testing.T) {
	dir := t.TempDir()
	// Retries spread over 400 ms; the writer pauses 30 ms.
	out, rec := runFileSource(t, dir, noPoll, func(s *FileSource) { s.retryDelay = 200 * time.Millisecond })
	expectSet(t, out)

	full := podYAML("web", "busybox:1.35")
	path := filepath.Join(dir, "web.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(full[:len(full)/2]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // the source sees the half, within its retries
	if _, err := f.WriteString(full[len(full)/2:]); err != nil {
		t.Fatal(err)
	}
	expectSet(t, out, "web")
	if got := rec.list(); len(got) != 0 {
		t.Errorf("half-written file was reported: %q", got)
	}
}

// The retry policy itself, without inotify: a broken file asks for quick
// re-reads, is reported after the last one, once, and a later fix is used.
func TestFileSourceRetryPolicy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write(t, path, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: \"busy")
	s, out, rec := newTestFileSource(dir, noPoll)
	ctx := context.Background()

	for i := 1; i < fileMaxAttempts; i++ {
		if !s.sync(ctx) {
			t.Fatalf("sync %d: no retry requested for a broken file", i)
		}
		if got := rec.list(); len(got) != 0 {
			t.Fatalf("sync %d: reported before the retries: %q", i, got)
		}
	}
	if s.sync(ctx) {
		t.Error("retry requested after the last attempt")
	}
	for range 3 {
		s.sync(ctx)
	}
	if got := rec.list(); len(got) != 1 || !strings.Contains(got[0], "invalid YAML: yaml: line 8") {
		t.Errorf("reports = %q, want one YAML error", got)
	}
	expectSet(t, out) // the source is ready even though its only file is broken
	write(t, path, podYAML("web", "busybox:1.35"))
	s.sync(ctx)
	expectSet(t, out, "web")
}

func TestFileSourceMissingDirAppears(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "manifests")
	out, _ := runFileSource(t, dir, noPoll)
	expectSet(t, out) // a missing dir is an empty, ready source
	expectNone(t, out)

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "busybox:1.35"))
	expectSet(t, out, "web")

	// Removing the whole directory removes its pods; recreating it with the
	// same file brings the same pod back.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	expectSet(t, out)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "busybox:1.35"))
	expectSet(t, out, "web")
}

func TestFileSourceMissingDirPolled(t *testing.T) {
	// Without the parent, nothing can be watched: the period finds it.
	parent := filepath.Join(t.TempDir(), "a")
	dir := filepath.Join(parent, "b")
	out, _ := runFileSource(t, dir, 30*time.Millisecond)
	expectSet(t, out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "busybox:1.35"))
	expectSet(t, out, "web")
}

func TestFileSourceDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.yaml"), podYAML("web", "busybox:1.36"))
	write(t, filepath.Join(dir, "a.yaml"), podYAML("web", "busybox:1.35"))
	out, rec := runFileSource(t, dir, noPoll)
	pods := expectSet(t, out, "web")
	if img := pods[0].Spec.Containers[0].Image; img != "busybox:1.35" {
		t.Errorf("running image %s, want a.yaml's busybox:1.35", img)
	}
	got := rec.waitReports(t, 1)
	want := fmt.Sprintf("%s: pod default/web-node-1 is already defined in %s; ignoring %s",
		filepath.Join(dir, "b.yaml"), filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"))
	if got[0] != want {
		t.Errorf("report = %q\nwant       %q", got[0], want)
	}
	// Once a.yaml is gone, b.yaml's pod runs.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	pods = expectSet(t, out, "web")
	if img := pods[0].Spec.Containers[0].Image; img != "busybox:1.36" {
		t.Errorf("running image %s, want b.yaml's", img)
	}
}

func TestFileSourceSingleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pod.manifest") // any name when given directly
	write(t, path, podYAML("web", "busybox:1.35"))
	write(t, filepath.Join(dir, "other.yaml"), podYAML("other", "busybox:1.35"))
	out, _ := runFileSource(t, path, noPoll)
	expectSet(t, out, "web")

	// Replace it the way editors and config tools do: write aside, rename.
	tmp := filepath.Join(dir, ".pod.manifest.tmp")
	write(t, tmp, podYAML("web2", "busybox:1.35"))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	expectSet(t, out, "web2")
}

func TestFileSourceTooLarge(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(50 << 20); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	f.Close()
	out, rec := runFileSource(t, dir, 20*time.Millisecond)
	expectSet(t, out)
	got := rec.waitReports(t, 1)
	if !strings.Contains(got[0], "big.yaml: read: manifest is larger than 10485760 bytes") {
		t.Errorf("report = %q", got[0])
	}
	// A second broken file: the sync that reports it re-reads big.yaml, as
	// every periodic sync before it did, and does not report it again.
	write(t, filepath.Join(dir, "later.yaml"), "kind: Pod\n")
	if got := rec.waitReports(t, 2); len(got) != 2 || !strings.Contains(got[1], "later.yaml: ") {
		t.Errorf("reports = %q, want big.yaml once, then later.yaml", got)
	}
}

func TestSelectPods(t *testing.T) {
	a := testPod("a", withName("web"))
	b := testPod("b", withName("web"))
	c := testPod("c", withName("db"))
	pods, errs := selectPods([]fileEntry{{"/m/1.yaml", a}, {"/m/2.yaml", nil}, {"/m/3.yaml", b}, {"/m/4.yaml", c}})
	if got := uids(pods); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("pods = %v", got)
	}
	if len(errs) != 1 || errs["/m/3.yaml"] == nil || !strings.Contains(errs["/m/3.yaml"].Error(), "/m/1.yaml") {
		t.Errorf("errs = %v", errs)
	}
}

func TestIsManifestName(t *testing.T) {
	for name, want := range map[string]bool{
		"web.yaml": true, "web.yml": true, "web.json": true, "WEB.YAML": true,
		".web.yaml": false, ".web.yaml.swp": false, "web.yaml~": false, "web.yaml.bak": false,
		"#web.yaml#": false, "4913": false, "web": false, "web.yaml.dpkg-old": false,
	} {
		if got := isManifestName(name); got != want {
			t.Errorf("isManifestName(%q) = %v, want %v", name, got, want)
		}
	}
}

// A manifest that appeared (typically renamed into place, complete) is read
// at once; anything written waits for the writer to finish.
func TestFileSourceEventSettleDelay(t *testing.T) {
	s := &FileSource{settleDelay: 20 * time.Millisecond, createSettleDelay: 2 * time.Millisecond}
	tests := []struct {
		op   fsnotify.Op
		want time.Duration
	}{
		{fsnotify.Create, 2 * time.Millisecond},
		{fsnotify.Write, 20 * time.Millisecond},
		{fsnotify.Create | fsnotify.Write, 20 * time.Millisecond},
		{fsnotify.Remove, 20 * time.Millisecond},
		{fsnotify.Rename, 20 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := s.eventSettleDelay(fsnotify.Event{Name: "/m/web.yaml", Op: tc.op}); got != tc.want {
			t.Errorf("%v: settle %v, want %v", tc.op, got, tc.want)
		}
	}
}
