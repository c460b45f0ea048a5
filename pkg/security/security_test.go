package security

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func testPod(mut func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "ns", "u1"
	p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox:1.35"}}
	if mut != nil {
		mut(p)
	}
	return p
}

func withSysctls(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.SecurityContext = &v1.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
	}
}

func TestSafeSysctlsByKernel(t *testing.T) {
	old := SafeSysctls("3.10.0")
	if len(old) != 7 {
		t.Errorf("3.10: %v", old)
	}
	if got := SafeSysctls("6.1.0-18-amd64"); len(got) != len(safeSysctls) {
		t.Errorf("6.1: %v", got)
	}
	if got := SafeSysctls(""); len(got) != 7 {
		t.Errorf("unknown kernel: %v", got)
	}
}

func TestNewSysctlAllowlist(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		err      string
	}{
		{patterns: []string{"net.core.somaxconn", "kernel.msg*", "net.ipv6.*"}},
		{patterns: []string{"net/ipv4/ip_forward"}},
		{patterns: []string{"vm.swappiness"}, err: "not known to be namespaced"},
		{patterns: []string{"kernel.*"}, err: "not known to be namespaced"},
		{patterns: []string{"*"}, err: "not known to be namespaced"},
		{patterns: []string{"net.*.foo"}, err: "must have at most"},
		{patterns: []string{"NET.core"}, err: "must have at most"},
		{patterns: []string{""}, err: "must have at most"},
	} {
		_, err := NewSysctlAllowlist(tc.patterns)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: err %v, want %q", tc.patterns, err, tc.err)
		}
	}
}

func TestAdmitSysctls(t *testing.T) {
	w, err := NewSysctlAllowlist(append(SafeSysctls("6.1"), "net.core.somaxconn", "kernel.msg*", "user.max_*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		msg  string // "" admits
	}{
		{name: "none", pod: testPod(nil)},
		{name: "safe", pod: testPod(withSysctls("net.ipv4.ip_local_port_range", "kernel.shm_rmid_forced"))},
		{name: "slash form", pod: testPod(withSysctls("net/ipv4/tcp_syncookies"))},
		{name: "allowed unsafe", pod: testPod(withSysctls("net.core.somaxconn"))},
		{name: "allowed by prefix", pod: testPod(withSysctls("kernel.msgmax"))},
		{name: "node level", pod: testPod(withSysctls("vm.swappiness")), msg: `forbidden sysctl: "vm.swappiness" not allowlisted`},
		{name: "unsafe not allowed", pod: testPod(withSysctls("net.ipv4.ip_forward")), msg: `"net.ipv4.ip_forward" not allowlisted`},
		{name: "first bad wins", pod: testPod(withSysctls("net.ipv4.tcp_syncookies", "kernel.panic")), msg: `"kernel.panic" not allowlisted`},
		{name: "net with host network", pod: testPod(func(p *v1.Pod) {
			withSysctls("net.ipv4.tcp_syncookies")(p)
			p.Spec.HostNetwork = true
		}), msg: `"net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{name: "ipc with host ipc", pod: testPod(func(p *v1.Pod) {
			withSysctls("kernel.shm_rmid_forced")(p)
			p.Spec.HostIPC = true
		}), msg: `"kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{name: "user ns sysctl with host users", pod: testPod(withSysctls("user.max_user_namespaces")),
			msg: `not allowed with host User enabled`},
		{name: "user ns sysctl in own userns", pod: testPod(func(p *v1.Pod) {
			withSysctls("user.max_user_namespaces")(p)
			p.Spec.HostUsers = ptr.To(false)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := w.AdmitSysctls(tc.pod)
			if tc.msg == "" {
				if r != nil {
					t.Fatalf("refused: %+v", r)
				}
				return
			}
			if r == nil || r.Reason != ReasonSysctlForbidden || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("got %+v, want SysctlForbidden %q", r, tc.msg)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	aa := func(typ v1.AppArmorProfileType) *v1.AppArmorProfile { return &v1.AppArmorProfile{Type: typ} }
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		node   Node
		reason string
		msg    string
	}{
		{name: "plain pod", pod: testPod(nil)},
		{name: "apparmor runtime default without apparmor", pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: aa(v1.AppArmorProfileTypeRuntimeDefault)}
		}), reason: ReasonAppArmor, msg: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "apparmor on a pod that ran already", pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: aa(v1.AppArmorProfileTypeRuntimeDefault)}
			p.Status.Phase = v1.PodRunning
		})},
		{name: "apparmor unconfined without apparmor", pod: testPod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: aa(v1.AppArmorProfileTypeUnconfined)}
		})},
		{name: "container localhost profile", pod: testPod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{
				Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-x")}}
		}), reason: ReasonAppArmor, msg: "not enabled on the host"},
		{name: "legacy annotation", pod: testPod(func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}
		}), reason: ReasonAppArmor},
		{name: "legacy annotation unconfined", pod: testPod(func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "unconfined"}
		})},
		{name: "apparmor enabled", node: Node{AppArmor: true}, pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: aa(v1.AppArmorProfileTypeRuntimeDefault)}
		})},
		{name: "apparmor enabled, empty localhost name", node: Node{AppArmor: true}, pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(" ")}}
		}), reason: ReasonAppArmor, msg: "invalid empty AppArmor profile name"},
		{name: "strict groups unsupported", pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
		}), reason: ReasonSupplementalGroupsPolicyNotSupported, msg: "SupplementalGroupsPolicy=Strict is not supported in this node"},
		{name: "merge groups", pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyMerge)}
		})},
		{name: "strict groups supported", node: Node{SupplementalGroupsPolicy: true}, pod: testPod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
		})},
		{name: "unmasked proc with host users", pod: testPod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		}), reason: ReasonProcMount, msg: "requires `hostUsers: false`"},
		{name: "default proc", pod: testPod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.DefaultProcMount)}
		})},
		{name: "unmasked proc in user namespace", pod: testPod(func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		})},
		{name: "linux pod", pod: testPod(func(p *v1.Pod) {
			p.Spec.OS = &v1.PodOS{Name: v1.Linux}
			p.Labels = map[string]string{v1.LabelOSStable: "linux"}
		})},
		{name: "windows pod", pod: testPod(func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			reason: ReasonOSNotSupported, msg: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "windows label", pod: testPod(func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "windows"} }),
			reason: ReasonOSSelector, msg: "`kubernetes.io/os` label doesn't match node label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Admit(tc.pod, tc.node)
			if tc.reason == "" {
				if r != nil {
					t.Fatalf("refused: %+v", r)
				}
				return
			}
			if r == nil || r.Reason != tc.reason || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("got %+v, want %s %q", r, tc.reason, tc.msg)
			}
		})
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	nonRoot := func(uid *int64) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: uid}
		}
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		imageUID *int64
		imageUsr string
		err      string
	}{
		{name: "not asked", pod: testPod(nil), imageUID: ptr.To[int64](0)},
		{name: "pod runAsUser 1000", pod: testPod(nonRoot(ptr.To[int64](1000))), imageUID: ptr.To[int64](0)},
		{name: "pod runAsUser 0", pod: testPod(nonRoot(ptr.To[int64](0))),
			err: `container's runAsUser breaks non-root policy (pod: "p_ns(u1)", container: c)`},
		{name: "container overrides pod uid", pod: testPod(func(p *v1.Pod) {
			nonRoot(ptr.To[int64](1000))(p)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](0)}
		}), err: "breaks non-root policy"},
		{name: "container turns it off", pod: testPod(func(p *v1.Pod) {
			nonRoot(nil)(p)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr.To(false)}
		}), imageUID: ptr.To[int64](0)},
		{name: "container-level only", pod: testPod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr.To(true)}
		}), imageUID: ptr.To[int64](0), err: "image will run as root"},
		{name: "image root", pod: testPod(nonRoot(nil)), imageUID: ptr.To[int64](0),
			err: `container has runAsNonRoot and image will run as root (pod: "p_ns(u1)", container: c)`},
		{name: "image without user is root", pod: testPod(nonRoot(nil)), err: "image will run as root"},
		{name: "image uid 65534", pod: testPod(nonRoot(nil)), imageUID: ptr.To[int64](65534)},
		{name: "image user by name", pod: testPod(nonRoot(nil)), imageUsr: "nobody",
			err: `image has non-numeric user (nobody), cannot verify user is non-root`},
		{name: "image uid too large", pod: testPod(nonRoot(nil)), imageUID: ptr.To[int64](1 << 40), err: "invalid user id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyRunAsNonRoot(tc.pod, &tc.pod.Spec.Containers[0], tc.imageUID, tc.imageUsr)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestSeccompProfile(t *testing.T) {
	sp := func(typ v1.SeccompProfileType, name string) *v1.SeccompProfile {
		p := &v1.SeccompProfile{Type: typ}
		if name != "" {
			p.LocalhostProfile = &name
		}
		return p
	}
	rd := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	un := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	for _, tc := range []struct {
		name      string
		seccomp   Seccomp
		pod, cont *v1.SeccompProfile
		sandbox   bool
		want      *runtimeapi.SecurityProfile
		err       string
	}{
		{name: "nothing", want: un},
		{name: "nothing, seccomp default", seccomp: Seccomp{Default: true}, want: rd},
		{name: "pod runtime default", pod: sp(v1.SeccompProfileTypeRuntimeDefault, ""), want: rd},
		{name: "container overrides pod", pod: sp(v1.SeccompProfileTypeRuntimeDefault, ""), cont: sp(v1.SeccompProfileTypeUnconfined, ""), want: un},
		{name: "sandbox uses pod", pod: sp(v1.SeccompProfileTypeRuntimeDefault, ""), cont: sp(v1.SeccompProfileTypeUnconfined, ""), sandbox: true, want: rd},
		{name: "explicit unconfined beats default", seccomp: Seccomp{Default: true}, cont: sp(v1.SeccompProfileTypeUnconfined, ""), want: un},
		{name: "localhost", seccomp: Seccomp{Root: "/var/lib/kubelet/seccomp"}, cont: sp(v1.SeccompProfileTypeLocalhost, "profiles/audit.json"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/seccomp/profiles/audit.json"}},
		{name: "localhost without name", seccomp: Seccomp{Root: "/r"}, cont: sp(v1.SeccompProfileTypeLocalhost, ""), err: "localhostProfile must be set"},
		{name: "localhost absolute", seccomp: Seccomp{Root: "/r"}, cont: sp(v1.SeccompProfileTypeLocalhost, "/etc/passwd"), err: "must be a relative path"},
		{name: "localhost escapes", seccomp: Seccomp{Root: "/r"}, cont: sp(v1.SeccompProfileTypeLocalhost, "a/../../etc/x"), err: "must not contain '..'"},
		{name: "localhost dotdot", seccomp: Seccomp{Root: "/r"}, cont: sp(v1.SeccompProfileTypeLocalhost, ".."), err: "must not contain '..'"},
		{name: "localhost is root", seccomp: Seccomp{Root: "/r"}, cont: sp(v1.SeccompProfileTypeLocalhost, "./"), err: "names the profile directory"},
		{name: "unknown type", cont: sp("Weird", ""), err: "unknown seccomp profile type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: tc.pod}
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: tc.cont}
			})
			c := &pod.Spec.Containers[0]
			if tc.sandbox {
				c = nil
			}
			got, err := tc.seccomp.Profile(pod, c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.ProfileType != tc.want.ProfileType || got.LocalhostRef != tc.want.LocalhostRef {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func TestAppArmorSecurityProfile(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d"}, v1.Container{Name: "e"})
		p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "d": "localhost/k8s-d"}
		p.Spec.Containers[2].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
	})
	for i, want := range []string{"runtime/default", "localhost/k8s-d", "unconfined"} {
		_, got, err := AppArmorSecurityProfile(pod, &pod.Spec.Containers[i])
		if err != nil || got != want {
			t.Errorf("container %d: %q %v, want %q", i, got, err, want)
		}
	}
}
