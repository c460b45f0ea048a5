package cri

import (
	"errors"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestContainerIdentityRoundTrip(t *testing.T) {
	for _, id := range []ContainerIdentity{
		{PodName: "web", PodNamespace: "default", PodUID: "u1", ContainerName: "nginx", Hash: 0xdeadbeefcafe, RestartCount: 3,
			TerminationGracePeriod: ptr(int64(30)), TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File"},
		{PodName: "p", PodNamespace: "ns", PodUID: "u2", ContainerName: "c", Hash: ^uint64(0)},
		{PodName: "p", PodNamespace: "ns", PodUID: "u3", ContainerName: "c", TerminationGracePeriod: ptr(int64(0)), DeletionGracePeriod: ptr(int64(5))},
		{PodName: "p", PodNamespace: "ns", PodUID: "u4", ContainerName: "c", Hash: 0x5e1854d5, SpecHash: 0xfeedface12345678,
			PreStopHandler: `{"exec":{"command":["sh"]}}`, Ports: `[{"containerPort":80,"protocol":"TCP"}]`},
	} {
		got, err := ParseContainerIdentity(id.Labels(), id.Annotations())
		if err != nil {
			t.Errorf("ParseContainerIdentity(%+v): %v", id, err)
		}
		if !reflect.DeepEqual(got, id) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, id)
		}
	}
}

func TestContainerIdentityUpstreamFormat(t *testing.T) {
	id := ContainerIdentity{PodName: "web", PodNamespace: "default", PodUID: "u1", ContainerName: "nginx", Hash: 255, RestartCount: 2,
		TerminationGracePeriod: ptr(int64(30))}
	want := map[string]string{
		"io.kubernetes.container.hash":             "ff",
		"io.kubernetes.container.restartCount":     "2",
		"io.kubernetes.pod.terminationGracePeriod": "30",
	}
	if got := id.Annotations(); !reflect.DeepEqual(got, want) {
		t.Errorf("Annotations() = %v, want %v", got, want)
	}
	wantLabels := map[string]string{
		"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default",
		"io.kubernetes.pod.uid": "u1", "io.kubernetes.container.name": "nginx",
	}
	if got := id.Labels(); !reflect.DeepEqual(got, wantLabels) {
		t.Errorf("Labels() = %v, want %v", got, wantLabels)
	}
}

// TestParseContainerIdentityFromUpstream: the labels and annotations the
// upstream kubelet v1.37 stamps on a container (as crictl inspect shows
// them) read as that container's identity, so nodelet adopts it.
func TestParseContainerIdentityFromUpstream(t *testing.T) {
	labels := map[string]string{
		"io.kubernetes.container.name": "kube-apiserver",
		"io.kubernetes.pod.name":       "kube-apiserver-node-1",
		"io.kubernetes.pod.namespace":  "kube-system",
		"io.kubernetes.pod.uid":        "0f3c6bd1a2e54a0c9c2e7a1b2c3d4e5f",
	}
	annotations := map[string]string{
		"io.kubernetes.container.hash":                     "bd8bd84c",
		"io.kubernetes.container.restartCount":             "2",
		"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
		"io.kubernetes.container.terminationMessagePolicy": "File",
		"io.kubernetes.pod.terminationGracePeriod":         "30",
		"io.kubernetes.container.preStopHandler":           `{"sleep":{"seconds":5}}`,
		"io.kubernetes.container.ports":                    `[{"name":"probe-port","containerPort":6443,"protocol":"TCP"}]`,
		// The runtime's own, ignored.
		"io.kubernetes.cri.container-type": "container",
	}
	got, err := ParseContainerIdentity(labels, annotations)
	if err != nil {
		t.Fatal(err)
	}
	want := ContainerIdentity{PodName: "kube-apiserver-node-1", PodNamespace: "kube-system", PodUID: "0f3c6bd1a2e54a0c9c2e7a1b2c3d4e5f",
		ContainerName: "kube-apiserver", Hash: 0xbd8bd84c, RestartCount: 2, TerminationGracePeriod: ptr(int64(30)),
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
		PreStopHandler: `{"sleep":{"seconds":5}}`, Ports: `[{"name":"probe-port","containerPort":6443,"protocol":"TCP"}]`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("identity:\n got %+v\nwant %+v", got, want)
	}
	// And back: what nodelet writes for it is what upstream wrote, key for
	// key (the runtime's own annotation aside).
	delete(annotations, "io.kubernetes.cri.container-type")
	if a := got.Annotations(); !reflect.DeepEqual(a, annotations) {
		t.Errorf("Annotations() = %v, want upstream's %v", a, annotations)
	}
}

func TestParseContainerIdentityMalformed(t *testing.T) {
	labels := ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c"}.Labels()
	without := func(key string) map[string]string {
		m := map[string]string{}
		for k, v := range labels {
			if k != key {
				m[k] = v
			}
		}
		return m
	}
	for _, tt := range []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		wantErr     error
		want        ContainerIdentity
	}{
		{"no labels at all", nil, nil, ErrNotManaged, ContainerIdentity{}},
		{"no pod uid", without(LabelPodUID), map[string]string{AnnotationContainerHash: "1"}, ErrNotManaged,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", ContainerName: "c"}},
		{"no container name", without(LabelContainerName), nil, ErrNotManaged,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u"}},
		{"hash missing", labels, map[string]string{AnnotationContainerRestartCount: "1"}, ErrMalformedIdentity,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c", RestartCount: 1}},
		{"hash not hex", labels, map[string]string{AnnotationContainerHash: "xyz", AnnotationContainerRestartCount: "4"}, ErrMalformedIdentity,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c", RestartCount: 4}},
		{"hash too large", labels, map[string]string{AnnotationContainerHash: "1ffffffffffffffff"}, ErrMalformedIdentity,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c"}},
		{"negative restart count", labels, map[string]string{AnnotationContainerHash: "a", AnnotationContainerRestartCount: "-1"}, ErrMalformedIdentity,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c", Hash: 10}},
		{"spec hash not hex", labels, map[string]string{AnnotationContainerHash: "a", AnnotationContainerSpecHash: "zz"}, ErrMalformedIdentity,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c", Hash: 10}},
		{"grace not a number", labels, map[string]string{AnnotationContainerHash: "a", AnnotationPodTerminationGracePeriod: "soon"}, ErrMalformedIdentity,
			ContainerIdentity{PodName: "p", PodNamespace: "ns", PodUID: "u", ContainerName: "c", Hash: 10}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseContainerIdentity(tt.labels, tt.annotations)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("identity:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSandboxIdentity(t *testing.T) {
	for _, id := range []SandboxIdentity{
		{PodName: "web", PodNamespace: "default", PodUID: "u1"},
		{PodName: "web", PodNamespace: "default", PodUID: "u1", HostNetwork: true},
	} {
		got, err := ParseSandboxIdentity(id.Labels(), id.Annotations())
		if err != nil || got != id {
			t.Errorf("round trip of %+v = %+v, %v", id, got, err)
		}
	}
	if _, err := ParseSandboxIdentity(map[string]string{LabelPodName: "x"}, nil); !errors.Is(err, ErrNotManaged) {
		t.Errorf("partial labels: err = %v, want ErrNotManaged", err)
	}
	labels := SandboxIdentity{PodName: "a", PodNamespace: "b", PodUID: "c"}.Labels()
	if _, err := ParseSandboxIdentity(labels, map[string]string{AnnotationSandboxHostNetwork: "maybe"}); !errors.Is(err, ErrMalformedIdentity) {
		t.Errorf("bad hostNetwork annotation: err = %v, want ErrMalformedIdentity", err)
	}
}
