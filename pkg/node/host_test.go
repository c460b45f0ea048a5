package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMeminfo(t *testing.T) {
	tests := []struct {
		name             string
		in               string
		total, available int64
		err              bool
	}{
		{"both", "MemTotal:        8000000 kB\nMemFree:  1 kB\nMemAvailable:    6000000 kB\n", 8000000 * 1024, 6000000 * 1024, false},
		{"old kernel without MemAvailable", "MemTotal: 1024 kB\n", 1024 * 1024, -1, false},
		{"no total", "MemFree: 1 kB\n", 0, 0, true},
		{"garbage", "MemTotal: lots kB\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "proc", "meminfo"), []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			total, avail, err := hostPaths{root: root}.meminfo()
			if (err != nil) != tt.err || total != tt.total || avail != tt.available {
				t.Errorf("got %d %d %v, want %d %d err=%v", total, avail, err, tt.total, tt.available, tt.err)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"0\n", 1, false}, {"0-1", 2, false}, {"0-3,6,8-9", 7, false},
		{"", 0, true}, {"3-1", 0, true}, {"a-b", 0, true},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseCPUList(%q) = %d, %v; want %d err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseSmallFiles(t *testing.T) {
	if n, err := parseLoadavgTasks([]byte("0.00 0.01 0.05 1/523 12345\n")); err != nil || n != 523 {
		t.Errorf("loadavg: %d %v", n, err)
	}
	if _, err := parseLoadavgTasks([]byte("0.00 0.01")); err == nil {
		t.Error("short loadavg accepted")
	}
	for in, want := range map[string]string{
		"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n": "Debian GNU/Linux 12 (bookworm)",
		"# comment\nNAME=Alpine\n":      "Alpine",
		"PRETTY_NAME='Single quoted'\n": "Single quoted",
		"":                              "Linux",
	} {
		if got := parseOSRelease([]byte(in)); got != want {
			t.Errorf("parseOSRelease(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]int64{"hugepages-2048kB": 2 << 20, "hugepages-1048576kB": 1 << 30, "hugepages-x": 0, "other": 0} {
		if got, _ := parseHugePageDir(in); got != want {
			t.Errorf("parseHugePageDir(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	cond := func(typ string, ok bool, reason string) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: typ, Status: ok, Reason: reason, Message: "msg"}
	}
	status := func(c ...*runtimeapi.RuntimeCondition) *runtimeapi.StatusResponse {
		return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: c}}
	}
	tests := []struct {
		name      string
		status    *runtimeapi.StatusResponse
		statusErr error
		healthErr error
		want      []string
	}{
		{"ready", status(cond("RuntimeReady", true, ""), cond("NetworkReady", true, "")), nil, nil, nil},
		{"network not ready", status(cond("RuntimeReady", true, ""), cond("NetworkReady", false, "NetworkPluginNotReady")), nil, nil,
			[]string{"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:msg"}},
		{"runtime not ready, network missing", status(cond("RuntimeReady", false, "Broken")), nil, nil,
			[]string{"container runtime not ready: RuntimeReady=false reason:Broken message:msg", "container runtime network not ready: NetworkReady condition not reported"}},
		{"down", nil, errors.New("connection refused"), nil, []string{"container runtime is down: connection refused"}},
		{"relist unhealthy", status(cond("RuntimeReady", true, ""), cond("NetworkReady", true, "")), nil, errors.New("last listed 4m ago"),
			[]string{"PLEG is not healthy: last listed 4m ago"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuntimeErrors(tt.status, tt.statusErr, tt.healthErr); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

type fakeRuntime struct {
	statusErr error
}

func (f fakeRuntime) Version(context.Context) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "1.6.20"}, nil
}

func (f fakeRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: "RuntimeReady", Status: true}, {Type: "NetworkReady", Status: true},
	}}}, nil
}

func (f fakeRuntime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{"docker.io/library/busybox:1.35"}, RepoDigests: []string{"docker.io/library/busybox@sha256:1"}, Size: 2 << 20}}, nil
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHostFacts(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"/proc/meminfo":                                          "MemTotal: 2048 kB\nMemAvailable: 1024 kB\n",
		"/proc/loadavg":                                          "0.1 0.2 0.3 2/400 99\n",
		"/proc/sys/kernel/pid_max":                               "32768\n",
		"/proc/sys/kernel/threads-max":                           "60000\n",
		"/proc/sys/kernel/random/boot_id":                        "boot-1\n",
		"/sys/devices/system/cpu/online":                         "0-1\n",
		"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": "2\n",
		"/etc/os-release":                                        "PRETTY_NAME=\"Test OS\"\n",
		"/etc/machine-id":                                        "machine-1\n",
		"/sys/class/dmi/id/product_uuid":                         "uuid-1\n",
	})
	h := NewHostFacts(HostConfig{
		Runtime: fakeRuntime{}, RootDir: root, Root: root,
		DiskPressure:   func() bool { return true },
		RuntimeHealthy: func() error { return nil },
	})
	f := h.Facts(context.Background())
	m := f.Machine
	if m.CPUs != 2 || m.MemoryBytes != 2048*1024 || m.EphemeralStorageBytes <= 0 || m.HugePages[2<<20] != 4<<20 {
		t.Errorf("machine %+v", m)
	}
	if m.OSImage != "Test OS" || m.MachineID != "machine-1" || m.SystemUUID != "uuid-1" || m.BootID != "boot-1" || m.KernelVersion == "" {
		t.Errorf("machine identity %+v", m)
	}
	if f.MemoryAvailable != 1024*1024 || f.PIDsInUse != 400 || f.PIDsMax != 32768 || !f.DiskPressure {
		t.Errorf("facts %+v", f)
	}
	if f.RuntimeVersion != "containerd://1.6.20" || len(f.RuntimeErrors) != 0 {
		t.Errorf("runtime %q %v", f.RuntimeVersion, f.RuntimeErrors)
	}
	if len(f.Images) != 1 || f.Images[0].Names[0] != "docker.io/library/busybox@sha256:1" {
		t.Errorf("images %+v", f.Images)
	}

	// Missing files and a runtime that is down leave facts unknown rather
	// than failing, and make the runtime errors say why.
	empty := t.TempDir()
	h = NewHostFacts(HostConfig{Runtime: fakeRuntime{statusErr: errors.New("refused")}, Root: empty})
	f = h.Facts(context.Background())
	if f.Machine.CPUs != 0 || f.Machine.MemoryBytes != 0 || f.MemoryAvailable != -1 || f.PIDsMax != 0 {
		t.Errorf("unknowns %+v", f)
	}
	if len(f.RuntimeErrors) != 1 || !strings.Contains(f.RuntimeErrors[0], "refused") {
		t.Errorf("runtime errors %v", f.RuntimeErrors)
	}
	if IsReady(DesiredStatus(testConfig(), f, v1.NodeStatus{}, t0)) {
		t.Error("ready without capacity and runtime")
	}
}

// TestHostFactsOnThisMachine reads the real /proc and /sys: whatever the
// machine, cpu and memory must be known, or the node would never be Ready.
func TestHostFactsOnThisMachine(t *testing.T) {
	f := NewHostFacts(HostConfig{RootDir: t.TempDir()}).Facts(context.Background())
	if f.Machine.CPUs <= 0 || f.Machine.MemoryBytes <= 0 || f.Machine.EphemeralStorageBytes <= 0 || f.Machine.KernelVersion == "" {
		t.Errorf("machine %+v", f.Machine)
	}
	if len(f.RuntimeErrors) == 0 {
		t.Error("no runtime, yet no runtime error")
	}
}
