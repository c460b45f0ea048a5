package cristatus

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

func ctrOf(id, sandbox, pod, name string, attempt uint32, created int64, state runtimeapi.ContainerState) *runtimeapi.Container {
	ident := cri.ContainerIdentity{PodName: pod, PodNamespace: "ns", PodUID: types.UID("uid-" + pod), ContainerName: name, Hash: 0xabc,
		RestartCount: int(attempt), TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File"}
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sandbox, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image: &runtimeapi.ImageSpec{Image: "busybox"}, ImageRef: "sha256:b", State: state, CreatedAt: created,
		Labels: ident.Labels(), Annotations: ident.Annotations(),
	}
}

func sandboxOf(id, pod string, attempt uint32, created int64, ready, hostNetwork bool) *runtimeapi.PodSandbox {
	ident := cri.SandboxIdentity{PodName: pod, PodNamespace: "ns", PodUID: types.UID("uid-" + pod), HostNetwork: hostNetwork}
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Name: pod, Namespace: "ns", Uid: "uid-" + pod, Attempt: attempt},
		State: state, CreatedAt: created, Labels: ident.Labels(), Annotations: ident.Annotations()}
}

func detail(id string, state runtimeapi.ContainerState, exit int32, mounts ...*runtimeapi.Mount) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{Id: id, State: state, StartedAt: 1, FinishedAt: 2, ExitCode: exit,
		LogPath: "/logs/" + id, Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}, Mounts: mounts}
}

func TestPodStatus(t *testing.T) {
	unmanaged := &runtimeapi.Container{Id: "foreign", Labels: map[string]string{"app": "other"}}
	noAnnotation := ctrOf("n3", "sb-new", "web", "n", 3, 50, running)
	delete(noAnnotation.Annotations, cri.AnnotationContainerRestartCount)
	for _, tc := range []struct {
		name  string
		state *cri.PodState
		check func(*runtime.PodStatus) string
	}{
		{"empty", &cri.PodState{}, func(s *runtime.PodStatus) string {
			if s.UID != "uid-web" || s.Name != "web" || s.Namespace != "ns" || len(s.Sandboxes)+len(s.Containers) != 0 {
				return "want an empty status of the pod"
			}
			return ""
		}},
		{"sandboxes, newest with its status", &cri.PodState{
			Sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb-new", "web", 1, 200, true, false), sandboxOf("sb-old", "web", 0, 100, false, false)},
			SandboxStatus: &runtimeapi.PodSandboxStatus{State: runtimeapi.PodSandboxState_SANDBOX_READY, Network: &runtimeapi.PodSandboxNetworkStatus{
				Ip: "10.88.0.7", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::7"}}}},
		}, func(s *runtime.PodStatus) string {
			if len(s.Sandboxes) != 2 || s.Sandboxes[0].ID != "sb-new" || s.Sandboxes[0].Attempt != 1 || s.PodIP() != "10.88.0.7" ||
				!slices.Equal(s.Sandboxes[0].IPs, []string{"10.88.0.7", "fd00::7"}) ||
				s.Sandboxes[1].State != runtime.SandboxStateNotReady || s.Sandboxes[1].IP != "" {
				return "want both, the newest ready with its IPs"
			}
			return ""
		}},
		{"host-network sandbox from the list", &cri.PodState{
			Sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb", "web", 0, 1, true, true)},
		}, func(s *runtime.PodStatus) string {
			if !s.LatestSandbox().HostNetwork || s.PodIP() != "" {
				return "want host network, no IP"
			}
			return ""
		}},
		{"containers with and without details", &cri.PodState{
			Containers: []*runtimeapi.Container{
				ctrOf("a2", "sb-new", "web", "a", 2, 230, running),
				ctrOf("a1", "sb-new", "web", "a", 1, 210, exited),
				ctrOf("a0", "sb-old", "web", "a", 0, 110, exited),
				unmanaged,
			},
			ContainerStatuses: []*runtimeapi.ContainerStatus{
				detail("a2", running, 0),
				detail("a1", exited, 2, &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: "/hosts"},
					&runtimeapi.Mount{ContainerPath: "/dev/termination-log", HostPath: "/pods/x/msg"}),
				nil, nil,
			},
		}, func(s *runtime.PodStatus) string {
			if len(s.Containers) != 3 {
				return "want the three managed instances"
			}
			a := s.LatestContainer("a")
			if a.ID != "a2" || a.RestartCount != 2 || a.Hash != 0xabc || a.StartedAt.IsZero() || a.LogPath != "/logs/a2" ||
				a.Image != "docker.io/library/busybox:1.35" || a.ImageRef != "sha256:b" || a.TerminationMessagePolicy != "File" {
				return "latest a wrong"
			}
			if prev := s.Containers[1]; prev.ExitCode != 2 || prev.FinishedAt.IsZero() || prev.State != runtime.ContainerStateExited ||
				prev.TerminationMessageFile != "/pods/x/msg" {
				return "previous a: want its exit details and message file"
			}
			if old := s.Containers[2]; old.State != runtime.ContainerStateExited || !old.StartedAt.IsZero() ||
				old.TerminationMessageFile != "" || old.Image != "busybox" {
				return "old a: want the list's data alone"
			}
			return ""
		}},
		{"restart count from the attempt without the annotation", &cri.PodState{
			Containers: []*runtimeapi.Container{noAnnotation},
		}, func(s *runtime.PodStatus) string {
			if s.Containers[0].RestartCount != 3 {
				return "want the CRI attempt"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := PodStatus("uid-web", "web", "ns", tc.state)
			if msg := tc.check(st); msg != "" {
				t.Errorf("%s: %+v", msg, st)
			}
		})
	}
}

func TestPods(t *testing.T) {
	unmanaged := &runtimeapi.Container{Id: "foreign", Labels: map[string]string{"app": "other"}}
	s := &cri.PodState{
		Sandboxes: []*runtimeapi.PodSandbox{sandboxOf("sb2", "db", 0, 150, true, false), sandboxOf("sb1", "web", 0, 100, true, true)},
		Containers: []*runtimeapi.Container{
			ctrOf("d0", "sb2", "db", "x", 0, 160, running), unmanaged,
			ctrOf("w1", "sb1", "web", "a", 1, 120, running), ctrOf("w0", "sb1", "web", "a", 0, 110, exited),
			// A container whose sandbox is gone still belongs to its pod.
			ctrOf("o0", "sb-gone", "orphan", "y", 0, 90, exited),
		},
	}
	s.Sandboxes[1].Annotations["kubernetes.io/config.source"] = "file"
	pods := Pods(s)
	byUID := map[string]*runtime.Pod{}
	for _, p := range pods {
		byUID[string(p.UID)] = p
	}
	if len(pods) != 3 {
		t.Fatalf("pods = %d, want web, db, orphan", len(pods))
	}
	web := byUID["uid-web"]
	if web.Name != "web" || web.Namespace != "ns" || web.Source != "file" || len(web.Sandboxes) != 1 || len(web.Containers) != 2 ||
		web.Containers[0].ID != "w1" || web.Containers[0].State != runtime.ContainerStateRunning || web.Containers[0].SandboxID != "sb1" {
		t.Errorf("web = %+v", web)
	}
	if o := byUID["uid-orphan"]; o == nil || len(o.Sandboxes) != 0 || o.Containers[0].Name != "y" {
		t.Errorf("orphan = %+v", o)
	}
}

func TestStatesAndTimes(t *testing.T) {
	for in, want := range map[runtimeapi.ContainerState]runtime.ContainerState{
		runtimeapi.ContainerState_CONTAINER_CREATED: runtime.ContainerStateCreated,
		running: runtime.ContainerStateRunning,
		exited:  runtime.ContainerStateExited,
		runtimeapi.ContainerState_CONTAINER_UNKNOWN: runtime.ContainerStateUnknown,
	} {
		if got := ContainerState(in); got != want {
			t.Errorf("ContainerState(%v) = %v, want %v", in, got, want)
		}
	}
	if SandboxState(runtimeapi.PodSandboxState_SANDBOX_READY) != runtime.SandboxStateReady ||
		SandboxState(runtimeapi.PodSandboxState_SANDBOX_NOTREADY) != runtime.SandboxStateNotReady {
		t.Error("SandboxState")
	}
	if !TimeFromUnixNano(0).IsZero() || !TimeFromUnixNano(5).Equal(time.Unix(0, 5)) {
		t.Error("TimeFromUnixNano")
	}
}
