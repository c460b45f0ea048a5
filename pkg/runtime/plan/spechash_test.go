package plan

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	podutil "github.com/nodelet/nodelet/pkg/pod"
	"github.com/nodelet/nodelet/pkg/runtime"
)

// TestComputeSpecChange: which spec changes restart a running container.
// An API pod's container restarts only for upstream's hash (name, image);
// a static pod's also for its whole-spec hash, when nodelet stamped one.
func TestComputeSpecChange(t *testing.T) {
	static := func(p *v1.Pod) {
		p.Annotations = map[string]string{podutil.ConfigSourceAnnotationKey: podutil.FileSource}
	}
	api := func(p *v1.Pod) {
		p.Annotations = map[string]string{podutil.ConfigSourceAnnotationKey: podutil.ApiserverSource}
	}
	newArgs := func(p *v1.Pod) { p.Spec.Containers[1].Args = []string{"changed"} }
	defaulted := func(p *v1.Pod) {
		p.Spec.Containers[1].TerminationMessagePolicy = v1.TerminationMessageReadFile
		p.Spec.Containers[1].ImagePullPolicy = v1.PullIfNotPresent
	}
	// withSpecHash stamps b's instance with the whole-spec hash of b as
	// newPod() declares it, as nodelet does for static pods.
	withSpecHash := func(cs *runtime.ContainerStatus) *runtime.ContainerStatus {
		cs.SpecHash = runtime.HashContainerSpec(&newPod().Spec.Containers[1])
		return cs
	}
	legacy := func(cs *runtime.ContainerStatus, p *v1.Pod) *runtime.ContainerStatus {
		cs.Hash = runtime.HashContainerSpec(&p.Spec.Containers[1])
		return cs
	}
	restartB := view{SandboxID: "s1", Kill: []string{"c2(b)"}, Start: []string{"b/1"}}
	keep := view{SandboxID: "s1"}
	for _, tt := range []struct {
		name string
		pod  *v1.Pod
		b    *runtime.ContainerStatus
		want view
	}{
		{"API pod: image changed", newPod(api, changeB), ctr("c2", "b", "s1", running, 0, 0), restartB},
		{"API pod: args changed (not upstream's hash)", newPod(api, newArgs), ctr("c2", "b", "s1", running, 0, 0), keep},
		{"API pod: a field gained a default", newPod(api, defaulted), ctr("c2", "b", "s1", running, 0, 0), keep},
		{"API pod: a spec hash stamped anyway is not read", newPod(api, newArgs), withSpecHash(ctr("c2", "b", "s1", running, 0, 0)), keep},
		{"static pod: unchanged", newPod(static), withSpecHash(ctr("c2", "b", "s1", running, 0, 0)), keep},
		{"static pod: image changed", newPod(static, changeB), withSpecHash(ctr("c2", "b", "s1", running, 0, 0)), restartB},
		{"static pod: manifest edited", newPod(static, newArgs), withSpecHash(ctr("c2", "b", "s1", running, 0, 0)), restartB},
		// A container the upstream kubelet made carries only its hash: the
		// takeover keeps it whatever else the manifest says.
		{"static pod: adopted from upstream", newPod(static, newArgs), ctr("c2", "b", "s1", running, 0, 0), keep},
		// An older nodelet stamped the whole spec's hash as the hash.
		{"older nodelet's container, spec unchanged", newPod(api), legacy(ctr("c2", "b", "s1", running, 0, 0), newPod()), keep},
		{"older nodelet's container, spec changed", newPod(api, newArgs), legacy(ctr("c2", "b", "s1", running, 0, 0), newPod()), restartB},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), tt.b)
			checkView(t, Compute(tt.pod, st, nil, t0), tt.want)
		})
	}
}

// TestComputeSidecarSpecChange: a running sidecar whose image changed is
// restarted, as upstream, during initialization and after it; other fields
// changing restart nothing.
func TestComputeSidecarSpecChange(t *testing.T) {
	newImage := func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "busybox:1.36" }
	newArgs := func(p *v1.Pod) { p.Spec.InitContainers[0].Args = []string{"changed"} }
	for _, tt := range []struct {
		name   string
		pod    *v1.Pod
		status *runtime.PodStatus
		want   view
	}{
		{"after init: image changed", newPod(inits("side"), onlyA, newImage),
			status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), ctr("x1", "side", "s1", running, 0, 0)),
			view{SandboxID: "s1", Kill: []string{"x1(side)"}, Start: []string{"init:side/1"}}},
		{"after init: args changed", newPod(inits("side"), onlyA, newArgs),
			status(sbs(ready("s1", 0)), ctr("c1", "a", "s1", running, 0, 0), ctr("x1", "side", "s1", running, 0, 0)),
			view{SandboxID: "s1"}},
		// The next init container waits for the replaced sidecar.
		{"during init: image changed", newPod(inits("side", "i1"), onlyA, newImage),
			status(sbs(ready("s1", 0)), ctr("x1", "side", "s1", running, 0, 0)),
			view{SandboxID: "s1", Kill: []string{"x1(side)"}, Start: []string{"init:side/1"}}},
		{"during init: args changed", newPod(inits("side", "i1"), onlyA, newArgs),
			status(sbs(ready("s1", 0)), ctr("x1", "side", "s1", running, 0, 0)),
			view{SandboxID: "s1", Start: []string{"init:i1/0"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkView(t, Compute(tt.pod, tt.status, nil, t0), tt.want)
		})
	}
}
