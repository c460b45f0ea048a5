package podsync

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

type fakeRuntimeClasses map[string]string

func (f fakeRuntimeClasses) RuntimeHandler(_ context.Context, name string) (string, error) {
	if h, ok := f[name]; ok {
		return h, nil
	}
	return "", errors.New(`runtimeclasses.node.k8s.io "` + name + `" not found`)
}

func hasEvent(events []string, substr string) bool {
	for _, e := range events {
		if strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

func TestRunAsNonRootWithRootImage(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	res := h.sync(pod)
	w := res.Waiting["a"]
	if w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, "container has runAsNonRoot and image will run as root") {
		t.Fatalf("waiting %+v", w)
	}
	if !errors.Is(res.Err, ErrCreateContainerConfig) {
		t.Fatalf("err %v", res.Err)
	}
	if ev := h.takeEvents(); !hasEvent(ev, "Warning Failed Error: container has runAsNonRoot and image will run as root (pod: \"web_default(uid-1)\", container: a)") {
		t.Fatalf("events %q", ev)
	}
	_, rest := h.calls()
	for _, c := range rest {
		if strings.HasPrefix(c, "CreateContainer") {
			t.Fatalf("container created: %q", rest)
		}
	}
}

func TestRunAsNonRootReadsImageUserAfterPull(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullAlways
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	res := h.sync(pod)
	if w := res.Waiting["a"]; w.Reason != ReasonCreateContainerConfigError {
		t.Fatalf("waiting %+v", w)
	}
	images, _ := h.calls()
	wantCalls(t, "image calls", images, []string{"PullImage busybox:1.35", "ImageStatus sha256:busybox:1.35"})
}

func TestRunAsNonRootWithUser(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("sync: %v", res.Err)
	}
	for _, c := range h.rt.containers {
		if u := c.config.GetLinux().GetSecurityContext().GetRunAsUser(); u.GetValue() != 1000 {
			t.Fatalf("runAsUser %v", u)
		}
	}
}

func TestRuntimeClass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes RuntimeClasses
		class   string
		err     string
	}{
		{name: "standalone", class: "gvisor", err: `runtimeClassName "gvisor" cannot be resolved: nodelet runs without an API server`},
		{name: "missing", classes: fakeRuntimeClasses{}, class: "gvisor", err: `runtimeclasses.node.k8s.io "gvisor" not found`},
		{name: "found", classes: fakeRuntimeClasses{"fast": "runc"}, class: "fast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.s.opts.RuntimeClasses = tc.classes
			pod := testPod("a")
			pod.Spec.RuntimeClassName = &tc.class
			res := h.sync(pod)
			if tc.err == "" {
				if res.Err != nil {
					t.Fatalf("sync: %v", res.Err)
				}
				return
			}
			if !errors.Is(res.Err, ErrCreatePodSandbox) || !strings.Contains(res.Err.Error(), tc.err) {
				t.Fatalf("err %v", res.Err)
			}
			if ev := h.takeEvents(); !hasEvent(ev, "Warning FailedCreatePodSandBox Failed to create pod sandbox: "+tc.err) {
				t.Fatalf("events %q", ev)
			}
			if len(h.rt.sandboxes) != 0 {
				t.Fatal("sandbox created")
			}
		})
	}
}

func TestHostUsersFalseRefused(t *testing.T) {
	h := newHarness(t)
	pod := testPod("a")
	pod.Spec.HostUsers = ptr.To(false)
	res := h.sync(pod)
	if !errors.Is(res.Err, ErrCreatePodSandbox) || !strings.Contains(res.Err.Error(), "runtime does not support user namespaces") {
		t.Fatalf("err %v", res.Err)
	}
	if ev := h.takeEvents(); !hasEvent(ev, "FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`") {
		t.Fatalf("events %q", ev)
	}
	if len(h.rt.sandboxes) != 0 {
		t.Fatal("sandbox created")
	}
}

func TestSecurityContextReachesRuntime(t *testing.T) {
	h := newHarness(t)
	h.s.opts.Config.SeccompDefault = true
	pod := testPod("a")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000),
		SupplementalGroups: []int64{4000}, SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1,c2"},
		Sysctls: []v1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}},
	}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities:   &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_BIND_SERVICE"}},
		SELinuxOptions: &v1.SELinuxOptions{Type: "spc_t"},
	}
	if res := h.sync(pod); res.Err != nil {
		t.Fatalf("sync: %v", res.Err)
	}
	for _, sb := range h.rt.sandboxes {
		sc := sb.config.GetLinux().GetSecurityContext()
		if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault || sc.GetSelinuxOptions().GetLevel() != "s0:c1,c2" ||
			sc.GetRunAsUser().GetValue() != 1000 || len(sc.GetSupplementalGroups()) != 2 {
			t.Errorf("sandbox security context %v", sc)
		}
		if sb.config.GetLinux().GetSysctls()["net.ipv4.tcp_syncookies"] != "1" {
			t.Errorf("sysctls %v", sb.config.GetLinux().GetSysctls())
		}
	}
	for _, c := range h.rt.containers {
		sc := c.config.GetLinux().GetSecurityContext()
		if !sc.GetNoNewPrivs() || !sc.GetReadonlyRootfs() || sc.GetRunAsGroup().GetValue() != 3000 ||
			sc.GetSelinuxOptions().GetType() != "spc_t" || sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault ||
			len(sc.GetMaskedPaths()) == 0 || len(sc.GetReadonlyPaths()) == 0 ||
			sc.GetCapabilities().GetDropCapabilities()[0] != "ALL" || sc.GetCapabilities().GetAddCapabilities()[0] != "NET_BIND_SERVICE" {
			t.Errorf("container security context %v", sc)
		}
	}
}
