package criconfig

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kptr "k8s.io/utils/ptr"
)

func TestContainerSecurityContext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mut    func(*v1.Pod)
		params ContainerParams
		check  func(*runtimeapi.LinuxContainerSecurityContext) bool
		err    string
	}{
		{name: "image uid becomes the user", params: ContainerParams{ImageUID: kptr.To[int64](1234)},
			check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool { return sc.GetRunAsUser().GetValue() == 1234 }},
		{name: "image user name", params: ContainerParams{ImageUser: "nobody"},
			check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
				return sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "nobody"
			}},
		{name: "spec user beats image", params: ContainerParams{ImageUID: kptr.To[int64](1234)},
			mut: func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: kptr.To[int64](7)} },
			check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
				return sc.GetRunAsUser().GetValue() == 7 && sc.GetRunAsUsername() == ""
			}},
		{name: "default procMount masks", check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			return len(sc.GetMaskedPaths()) >= 12 && len(sc.GetReadonlyPaths()) == 5
		}},
		{name: "unmasked procMount", mut: func(p *v1.Pod) {
			p.Spec.HostUsers = nil
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: kptr.To(v1.UnmaskedProcMount)}
		}, check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			return sc.MaskedPaths != nil && len(sc.MaskedPaths) == 0 && len(sc.ReadonlyPaths) == 0
		}},
		{name: "apparmor localhost by annotation", mut: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + p.Spec.Containers[0].Name: "localhost/k8s-x"}
		}, check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			return sc.GetApparmor().GetProfileType() == runtimeapi.SecurityProfile_Localhost && sc.GetApparmor().GetLocalhostRef() == "k8s-x" &&
				sc.GetApparmorProfile() == "localhost/k8s-x"
		}},
		{name: "selinux container over pod", mut: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1"}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Type: "t"}}
		}, check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			return sc.GetSelinuxOptions().GetType() == "t" && sc.GetSelinuxOptions().GetLevel() == ""
		}},
		{name: "strict groups policy", mut: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: kptr.To(v1.SupplementalGroupsPolicyStrict)}
		}, check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			return sc.GetSupplementalGroupsPolicy() == runtimeapi.SupplementalGroupsPolicy_Strict
		}},
		{name: "seccomp localhost under root", mut: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{
				Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: kptr.To("a.json")}}
		}, check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			return sc.GetSeccomp().GetLocalhostRef() == testOpts.RootDir+"/seccomp/a.json"
		}},
		{name: "runAsNonRoot with root image", params: ContainerParams{ImageUID: kptr.To[int64](0)},
			mut: func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: kptr.To(true)} },
			err: "container has runAsNonRoot and image will run as root"},
		{name: "target container: its process namespace", params: ContainerParams{TargetContainerID: "ctr-1"},
			check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
				ns := sc.GetNamespaceOptions()
				return ns.GetPid() == runtimeapi.NamespaceMode_TARGET && ns.GetTargetId() == "ctr-1" &&
					ns.GetNetwork() == runtimeapi.NamespaceMode_POD && ns.GetIpc() == runtimeapi.NamespaceMode_POD
			}},
		{name: "no target: own process namespace", check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
			ns := sc.GetNamespaceOptions()
			return ns.GetPid() == runtimeapi.NamespaceMode_CONTAINER && ns.GetTargetId() == ""
		}},
		{name: "target in a pod sharing its process namespace: the pod's", params: ContainerParams{TargetContainerID: "ctr-1"},
			mut: func(p *v1.Pod) { p.Spec.ShareProcessNamespace = kptr.To(true) },
			check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
				ns := sc.GetNamespaceOptions()
				return ns.GetPid() == runtimeapi.NamespaceMode_POD && ns.GetTargetId() == ""
			}},
		{name: "target in a host-PID pod: the node's", params: ContainerParams{TargetContainerID: "ctr-1"},
			mut: func(p *v1.Pod) { p.Spec.HostPID = true },
			check: func(sc *runtimeapi.LinuxContainerSecurityContext) bool {
				ns := sc.GetNamespaceOptions()
				return ns.GetPid() == runtimeapi.NamespaceMode_NODE && ns.GetTargetId() == ""
			}},
		{name: "user namespace", mut: func(p *v1.Pod) { p.Spec.HostUsers = kptr.To(false) }, err: "runtime does not support user namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := configPod()
			if tc.mut != nil {
				tc.mut(p)
			}
			cfg, _, err := ContainerConfig(p, &p.Spec.Containers[0], tc.params, testOpts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc := cfg.GetLinux().GetSecurityContext(); !tc.check(sc) {
				t.Fatalf("security context %v", sc)
			}
		})
	}
}

func TestSandboxRefusesUserNamespace(t *testing.T) {
	p := configPod()
	p.Spec.HostUsers = kptr.To(false)
	if _, err := SandboxConfig(p, 0, SandboxResources{}, testOpts); !errors.Is(err, ErrUserNamespaces) {
		t.Fatalf("err %v", err)
	}
	// A runtime with user namespaces: still refused, for nodelet's part.
	opts := testOpts
	opts.UserNamespaces = true
	if _, err := SandboxConfig(p, 0, SandboxResources{}, opts); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "does not allocate user namespace ID mappings") {
		t.Fatalf("err %v", err)
	}
}

func TestMaskedPathsFromOptions(t *testing.T) {
	p := configPod()
	opts := testOpts
	opts.MaskedPaths = MaskedPaths("/sys/devices/system/cpu/cpu0/thermal_throttle")
	cfg, _, err := ContainerConfig(p, &p.Spec.Containers[0], ContainerParams{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Linux.SecurityContext.MaskedPaths
	if len(got) != len(defaultMaskedPaths)+1 || got[len(got)-1] != "/sys/devices/system/cpu/cpu0/thermal_throttle" {
		t.Errorf("masked paths = %v", got)
	}
}
