package podsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

func TestReadTailIsBoundedAndRefusesTricks(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 10000)+"END"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readTail(big, MaxTerminationMessage)
	if err != nil || len(got) != MaxTerminationMessage || !strings.HasSuffix(string(got), "END") {
		t.Errorf("big file: %d bytes, err %v", len(got), err)
	}
	secret := filepath.Join(dir, "secret")
	_ = os.WriteFile(secret, []byte("host secret"), 0o600)
	link := filepath.Join(dir, "link")
	_ = os.Symlink(secret, link)
	if _, err := readTail(link, MaxTerminationMessage); err == nil {
		t.Error("followed a symlink")
	}
	// A symlinked directory on the way is refused too.
	_ = os.Symlink(dir, filepath.Join(dir, "dirlink"))
	if _, err := readTail(filepath.Join(dir, "dirlink", "secret"), MaxTerminationMessage); err == nil {
		t.Error("followed a symlinked directory")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readTail(fifo, MaxTerminationMessage); err == nil {
		t.Error("read a FIFO")
	}
	if _, err := readTail(filepath.Join(dir, "missing"), MaxTerminationMessage); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msgFile := filepath.Join(dir, "msg")
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(msgFile, []byte("bye"), 0o644)
	_ = os.WriteFile(empty, nil, 0o644)
	logFile := filepath.Join(dir, "0.log")
	var log strings.Builder
	for i := range 100 {
		stream := "stdout"
		if i%2 == 1 {
			stream = "stderr"
		}
		log.WriteString("2026-01-01T00:00:00.000000000Z " + stream + " F line " + string(rune('a'+i%26)) + "\n")
	}
	_ = os.WriteFile(logFile, []byte(log.String()), 0o644)

	const file, fallback = "File", policyFallbackToLogsOnError
	status := func(host string, exit int32, policy string) *runtime.ContainerStatus {
		return &runtime.ContainerStatus{ID: "c1", ExitCode: exit, LogPath: logFile, TerminationMessagePath: "/dev/termination-log",
			TerminationMessagePolicy: policy, TerminationMessageFile: host}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		st   *runtime.ContainerStatus
		want func(string) bool
	}{
		{"file", status(msgFile, 1, file), func(s string) bool { return s == "bye" }},
		{"empty file, File policy", status(empty, 1, file), func(s string) bool { return s == "" }},
		{"file wins over logs", status(msgFile, 1, fallback), func(s string) bool { return s == "bye" }},
		{"empty file falls back on error", status(empty, 1, fallback), func(s string) bool {
			return strings.HasSuffix(s, "line v\n") && strings.Count(s, "\n") == 80 && !strings.Contains(s, "stdout")
		}},
		{"missing file falls back on error", status(filepath.Join(dir, "nope"), 2, fallback), func(s string) bool { return strings.HasSuffix(s, "line v\n") }},
		{"no fallback on success", status(empty, 0, fallback), func(s string) bool { return s == "" }},
		{"not mounted", &runtime.ContainerStatus{ExitCode: 1, TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: file}, func(s string) bool { return s == "" }},
		{"no details (an older instance)", &runtime.ContainerStatus{TerminationMessagePolicy: fallback}, func(s string) bool { return s == "" }},
	} {
		if got := terminationMessage(ctx, tc.st); !tc.want(got) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := tailBuffer{max: 5}
	for _, s := range []string{"ab", "cd", "ef", "g"} {
		_, _ = b.Write([]byte(s))
	}
	if got := b.b.String(); got != "cdefg" {
		t.Errorf("got %q", got)
	}
	_, _ = b.Write([]byte("0123456789"))
	if got := b.b.String(); got != "56789" {
		t.Errorf("got %q", got)
	}
}

type podStateFunc func(types.UID) (*cri.PodState, error)

func (f podStateFunc) PodState(_ context.Context, uid types.UID) (*cri.PodState, error) {
	return f(uid)
}

func TestReadPodStatusAddsTerminationMessages(t *testing.T) {
	msg := filepath.Join(t.TempDir(), "msg")
	_ = os.WriteFile(msg, []byte("bye"), 0o644)
	ctr := func(id string, state runtimeapi.ContainerState) *runtimeapi.Container {
		ident := cri.ContainerIdentity{PodName: "web", PodNamespace: "ns", PodUID: "uid", ContainerName: id,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File"}
		return &runtimeapi.Container{Id: id, State: state, Metadata: &runtimeapi.ContainerMetadata{Name: id},
			Labels: ident.Labels(), Annotations: ident.Annotations()}
	}
	mounts := []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: msg}}
	r := podStateFunc(func(uid types.UID) (*cri.PodState, error) {
		return &cri.PodState{
			Containers: []*runtimeapi.Container{ctr("done", runtimeapi.ContainerState_CONTAINER_EXITED), ctr("up", runtimeapi.ContainerState_CONTAINER_RUNNING)},
			ContainerStatuses: []*runtimeapi.ContainerStatus{
				{Id: "done", State: runtimeapi.ContainerState_CONTAINER_EXITED, Message: "runtime says", Mounts: mounts},
				{Id: "up", State: runtimeapi.ContainerState_CONTAINER_RUNNING, Mounts: mounts},
			},
		}, nil
	})
	st, err := ReadPodStatus(context.Background(), r, "uid", "web", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.LatestContainer("done").Message; got != "runtime says: bye" {
		t.Errorf("exited container's message = %q", got)
	}
	if got := st.LatestContainer("up").Message; got != "" {
		t.Errorf("running container's message = %q, want none", got)
	}
	failing := podStateFunc(func(types.UID) (*cri.PodState, error) { return nil, cri.ErrUnavailable })
	if _, err := ReadPodStatus(context.Background(), failing, "uid", "web", "ns"); !errors.Is(err, cri.ErrUnavailable) ||
		!strings.Contains(err.Error(), "status of pod ns/web (uid)") {
		t.Errorf("err = %v", err)
	}
}
