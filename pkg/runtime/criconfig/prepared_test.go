package criconfig

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxResourcesReachTheConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  SandboxResources
		want string
	}{
		{"none: the runtime's default", SandboxResources{}, ""},
		{"cgroup parent", SandboxResources{CgroupParent: "/kubepods/burstable/poduid-1"}, "/kubepods/burstable/poduid-1"},
	} {
		cfg, err := SandboxConfig(configPod(), 0, tc.res, testOpts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cfg.GetLinux().GetCgroupParent(); got != tc.want {
			t.Errorf("%s: cgroup parent = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestContainerResourcesReachTheConfig(t *testing.T) {
	kv := func(k, v string) *runtimeapi.KeyValue { return &runtimeapi.KeyValue{Key: k, Value: []byte(v)} }
	gpu := &runtimeapi.Device{ContainerPath: "/dev/gpu0", HostPath: "/dev/nvidia0", Permissions: "rw"}
	driver := &runtimeapi.Mount{ContainerPath: "/usr/local/driver", HostPath: "/opt/driver", Readonly: true}
	for _, tc := range []struct {
		name        string
		env         []v1.EnvVar
		command     []string
		res         ContainerResources
		wantEnv     []string
		wantCommand []string
		wantDevices []*runtimeapi.Device
		wantMount   *runtimeapi.Mount
		wantErr     string
	}{{
		name:    "nothing prepared",
		env:     []v1.EnvVar{{Name: "A", Value: "1"}},
		wantEnv: []string{"A=1"},
	}, {
		name:        "devices, variables after the spec's, mounts",
		env:         []v1.EnvVar{{Name: "A", Value: "1"}},
		res:         ContainerResources{Devices: []*runtimeapi.Device{gpu}, Env: []*runtimeapi.KeyValue{kv("GPU", "0")}, Mounts: []*runtimeapi.Mount{driver}},
		wantEnv:     []string{"A=1", "GPU=0"},
		wantDevices: []*runtimeapi.Device{gpu},
		wantMount:   driver,
	}, {
		name:    "the spec's definition of a name wins",
		env:     []v1.EnvVar{{Name: "GPU", Value: "mine"}},
		res:     ContainerResources{Env: []*runtimeapi.KeyValue{kv("GPU", "0"), kv("B", "2")}},
		wantEnv: []string{"GPU=mine", "B=2"},
	}, {
		name:        "a prepared variable expands in the command",
		command:     []string{"run", "--gpu=$(GPU)"},
		res:         ContainerResources{Env: []*runtimeapi.KeyValue{kv("GPU", "0")}},
		wantEnv:     []string{"GPU=0"},
		wantCommand: []string{"run", "--gpu=0"},
	}, {
		name:    "a mount where a volume is",
		res:     ContainerResources{Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: "/x"}}},
		wantErr: "a volume is mounted there",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := configPod()
			c := &pod.Spec.Containers[0]
			c.Env, c.Command, c.TerminationMessagePath = tc.env, tc.command, "/dev/termination-log"
			cfg, _, err := ContainerConfig(pod, c, ContainerParams{TerminationMessageFile: "/msg", Resources: tc.res}, testOpts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var env []string
			for _, e := range cfg.Envs {
				env = append(env, e.Key+"="+string(e.Value))
			}
			if !reflect.DeepEqual(env, tc.wantEnv) {
				t.Errorf("env = %v, want %v", env, tc.wantEnv)
			}
			if tc.wantCommand != nil && !reflect.DeepEqual(cfg.Command, tc.wantCommand) {
				t.Errorf("command = %v, want %v", cfg.Command, tc.wantCommand)
			}
			if !reflect.DeepEqual(cfg.Devices, tc.wantDevices) {
				t.Errorf("devices = %v, want %v", cfg.Devices, tc.wantDevices)
			}
			if tc.wantMount != nil && cfg.Mounts[len(cfg.Mounts)-1] != tc.wantMount {
				t.Errorf("mounts = %v, want %v last", cfg.Mounts, tc.wantMount)
			}
		})
	}
}
