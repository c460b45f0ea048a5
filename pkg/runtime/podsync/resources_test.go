package podsync

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime/criconfig"
)

// fakeHook is a ResourceHook that records its calls in a shared log.
type fakeHook struct {
	name     string
	log      *[]string
	res      Resources
	err      error
	checkErr error
}

func (f *fakeHook) Name() string { return f.name }

func (f *fakeHook) CheckSpec(*v1.Pod) error {
	*f.log = append(*f.log, "check "+f.name)
	return f.checkErr
}

func (f *fakeHook) Prepare(context.Context, *v1.Pod) (Resources, error) {
	*f.log = append(*f.log, "prepare "+f.name)
	return f.res, f.err
}

func (f *fakeHook) Teardown(context.Context, types.UID) error {
	*f.log = append(*f.log, "teardown "+f.name)
	return f.err
}

func TestResourcePipeline(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name                         string
		a, b                         fakeHook
		wantLog                      []string
		wantPaths                    map[string]string
		wantCheck, wantPrep, wantTdn string
	}{{
		name:      "in order, merged",
		a:         fakeHook{res: Resources{VolumePaths: map[string]string{"x": "/x"}}},
		b:         fakeHook{res: Resources{VolumePaths: map[string]string{"y": "/y"}}},
		wantLog:   []string{"check a", "check b", "prepare a", "prepare b", "teardown b", "teardown a"},
		wantPaths: map[string]string{"x": "/x", "y": "/y"},
	}, {
		name:      "a failure stops check and prepare, not teardown",
		a:         fakeHook{err: boom, checkErr: boom},
		wantLog:   []string{"check a", "prepare a", "teardown b", "teardown a"},
		wantCheck: "boom", wantPrep: "boom", wantTdn: "resource hook a: boom",
	}, {
		name:     "a volume prepared twice",
		a:        fakeHook{res: Resources{VolumePaths: map[string]string{"x": "/x"}}},
		b:        fakeHook{res: Resources{VolumePaths: map[string]string{"x": "/other"}}},
		wantLog:  []string{"check a", "check b", "prepare a", "prepare b", "teardown b", "teardown a"},
		wantPrep: `resource hook b: volume "x" prepared twice`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			a, b := tc.a, tc.b
			a.name, a.log, b.name, b.log = "a", &log, "b", &log
			s := &Syncer{resources: []ResourceHook{&a, &b}}
			ctx := context.Background()
			checkErr := s.checkSpec(&v1.Pod{})
			res, prepErr := s.prepareResources(ctx, &v1.Pod{})
			tdnErr := s.teardownResources(ctx, "u")
			for _, e := range []struct {
				err  error
				want string
			}{{checkErr, tc.wantCheck}, {prepErr, tc.wantPrep}, {tdnErr, tc.wantTdn}} {
				if (e.err == nil) != (e.want == "") || e.err != nil && !strings.Contains(e.err.Error(), e.want) {
					t.Errorf("err = %v, want %q", e.err, e.want)
				}
			}
			if !reflect.DeepEqual(log, tc.wantLog) {
				t.Errorf("calls = %v, want %v", log, tc.wantLog)
			}
			if prepErr == nil && !reflect.DeepEqual(res.VolumePaths, tc.wantPaths) {
				t.Errorf("volume paths = %v, want %v", res.VolumePaths, tc.wantPaths)
			}
		})
	}
}

// deviceHook prepares what a device plugin and a pod-cgroup hook would: a
// cgroup parent for the sandbox, a device and a variable for a container.
type deviceHook struct{ fakeHook }

func (d *deviceHook) PrepareSandbox(context.Context, *v1.Pod) (criconfig.SandboxResources, error) {
	*d.log = append(*d.log, "prepare sandbox "+d.name)
	return criconfig.SandboxResources{CgroupParent: "/kubepods/pod" + d.name}, nil
}

func TestResourcePipelineMerge(t *testing.T) {
	dev := func(path string) criconfig.ContainerResources {
		return criconfig.ContainerResources{Devices: []*runtimeapi.Device{{ContainerPath: path, HostPath: path}}}
	}
	env := func(k string) criconfig.ContainerResources {
		return criconfig.ContainerResources{Env: []*runtimeapi.KeyValue{{Key: k}}}
	}
	mnt := func(path string) criconfig.ContainerResources {
		return criconfig.ContainerResources{Mounts: []*runtimeapi.Mount{{ContainerPath: path}}}
	}
	for _, tc := range []struct {
		name    string
		a, b    map[string]criconfig.ContainerResources
		want    map[string]int // container -> devices+env+mounts
		wantErr string
	}{
		{name: "different containers", a: map[string]criconfig.ContainerResources{"x": dev("/dev/a")},
			b: map[string]criconfig.ContainerResources{"y": dev("/dev/a")}, want: map[string]int{"x": 1, "y": 1}},
		{name: "one container, different kinds", a: map[string]criconfig.ContainerResources{"x": dev("/dev/a")},
			b: map[string]criconfig.ContainerResources{"x": env("A")}, want: map[string]int{"x": 2}},
		{name: "a device twice", a: map[string]criconfig.ContainerResources{"x": dev("/dev/a")},
			b: map[string]criconfig.ContainerResources{"x": dev("/dev/a")}, wantErr: `resource hook b: container "x": device "/dev/a" prepared twice`},
		{name: "a variable twice", a: map[string]criconfig.ContainerResources{"x": env("A")},
			b: map[string]criconfig.ContainerResources{"x": env("A")}, wantErr: `variable "A" prepared twice`},
		{name: "a mount twice", a: map[string]criconfig.ContainerResources{"x": mnt("/m")},
			b: map[string]criconfig.ContainerResources{"x": mnt("/m")}, wantErr: `mount "/m" prepared twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			a := &fakeHook{name: "a", log: &log, res: Resources{Containers: tc.a}}
			b := &fakeHook{name: "b", log: &log, res: Resources{Containers: tc.b}}
			res, err := (&Syncer{resources: []ResourceHook{a, b}}).prepareResources(context.Background(), &v1.Pod{})
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			got := map[string]int{}
			for name, c := range res.Containers {
				got[name] = len(c.Devices) + len(c.Env) + len(c.Mounts)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("merged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSandboxPhase(t *testing.T) {
	var log []string
	plain := &fakeHook{name: "volumes", log: &log}
	a := &deviceHook{fakeHook{name: "a", log: &log}}
	s := &Syncer{resources: []ResourceHook{plain, a}}
	res, err := s.prepareSandbox(context.Background(), &v1.Pod{})
	if err != nil || res.CgroupParent != "/kubepods/poda" || !reflect.DeepEqual(log, []string{"prepare sandbox a"}) {
		t.Errorf("prepareSandbox = %+v, %v; calls %v", res, err, log)
	}
	b := &deviceHook{fakeHook{name: "b", log: &log}}
	s.resources = append(s.resources, b)
	if _, err := s.prepareSandbox(context.Background(), &v1.Pod{}); err == nil || !strings.Contains(err.Error(), "resource hook b: cgroup parent prepared twice") {
		t.Errorf("two cgroup parents: %v", err)
	}
}

// A hook's device, variable and cgroup parent reach the runtime's requests.
func TestPreparedResourcesReachTheRuntime(t *testing.T) {
	h := newHarness(t)
	var log []string
	hook := &deviceHook{fakeHook{name: "gpu", log: &log, res: Resources{Containers: map[string]criconfig.ContainerResources{
		"app": {
			Devices: []*runtimeapi.Device{{ContainerPath: "/dev/gpu0", HostPath: "/dev/nvidia0", Permissions: "rw"}},
			Env:     []*runtimeapi.KeyValue{{Key: "GPU_VISIBLE", Value: []byte("0")}},
		},
	}}}}
	h.s.resources = append(h.s.resources, hook)
	pod := testPod("app", "side")
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("sync: %v", res.Err)
	}
	if !reflect.DeepEqual(log, []string{"check gpu", "prepare sandbox gpu", "prepare gpu"}) {
		t.Errorf("hook calls = %v", log)
	}
	h.rt.mu.Lock()
	defer h.rt.mu.Unlock()
	if len(h.rt.sandboxes) != 1 {
		t.Fatalf("sandboxes = %d", len(h.rt.sandboxes))
	}
	for _, sb := range h.rt.sandboxes {
		if got := sb.config.GetLinux().GetCgroupParent(); got != "/kubepods/podgpu" {
			t.Errorf("RunPodSandbox cgroup parent = %q", got)
		}
	}
	for _, c := range h.rt.containers {
		devices, env := c.config.GetDevices(), c.config.GetEnvs()
		switch c.config.GetMetadata().GetName() {
		case "app":
			if len(devices) != 1 || devices[0].HostPath != "/dev/nvidia0" {
				t.Errorf("app devices = %v", devices)
			}
			if len(env) != 1 || env[0].Key != "GPU_VISIBLE" || string(env[0].Value) != "0" {
				t.Errorf("app env = %v", env)
			}
		case "side":
			if len(devices)+len(env) != 0 {
				t.Errorf("side got app's resources: %v %v", devices, env)
			}
		}
	}
}
