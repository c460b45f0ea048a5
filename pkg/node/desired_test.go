package node

import (
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testConfig() Config {
	cfg, err := Config{
		NodeName: "n1", NodeIPs: []string{"10.0.0.5"}, MaxPods: 110, KubeletPort: 10250,
		Version: "v9.9.9", OS: "linux", Arch: "amd64", RegisterNode: true,
	}.withDefaults()
	if err != nil {
		panic(err)
	}
	return cfg
}

func healthyFacts() Facts {
	return Facts{
		Machine: Machine{
			CPUs: 2, MemoryBytes: 4 << 30, EphemeralStorageBytes: 100 << 30,
			HugePages:     map[int64]int64{2 << 20: 0},
			KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)",
			MachineID: "mid", SystemUUID: "uuid", BootID: "boot",
		},
		MemoryAvailable: 3 << 30, PIDsInUse: 300, PIDsMax: 32768,
		RuntimeVersion: "containerd://1.6.20",
		Images:         []v1.ContainerImage{{Names: []string{"busybox:1.35"}, SizeBytes: 2 << 20}},
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func conditionMap(st v1.NodeStatus) map[v1.NodeConditionType]v1.NodeCondition {
	out := map[v1.NodeConditionType]v1.NodeCondition{}
	for _, c := range st.Conditions {
		out[c.Type] = c
	}
	return out
}

func TestDesiredStatusFromScratch(t *testing.T) {
	st := DesiredStatus(testConfig(), healthyFacts(), v1.NodeStatus{}, t0)

	wantCap := map[v1.ResourceName]string{
		v1.ResourceCPU: "2", v1.ResourceMemory: "4Gi", v1.ResourceEphemeralStorage: "100Gi",
		v1.ResourcePods: "110", "hugepages-2Mi": "0",
	}
	for name, want := range wantCap {
		got, ok := st.Capacity[name]
		if !ok || got.Cmp(q(want)) != 0 {
			t.Errorf("capacity %s = %v, want %s", name, got.String(), want)
		}
	}
	wantAlloc := map[v1.ResourceName]resource.Quantity{
		v1.ResourceCPU: q("2"), v1.ResourceMemory: q("3996Mi"),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(100<<30-(100<<30)/10, resource.BinarySI),
		v1.ResourcePods:             q("110"),
	}
	for name, want := range wantAlloc {
		if got := st.Allocatable[name]; got.Cmp(want) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), want.String())
		}
	}
	wantAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1"}}
	if !reflect.DeepEqual(st.Addresses, wantAddrs) {
		t.Errorf("addresses %v, want %v", st.Addresses, wantAddrs)
	}
	if st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("kubelet port %d", st.DaemonEndpoints.KubeletEndpoint.Port)
	}
	wantInfo := v1.NodeSystemInfo{
		MachineID: "mid", SystemUUID: "uuid", BootID: "boot", KernelVersion: "6.1.0",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.6.20",
		KubeletVersion: "v9.9.9", OperatingSystem: "linux", Architecture: "amd64",
	}
	if st.NodeInfo != wantInfo {
		t.Errorf("nodeInfo %+v, want %+v", st.NodeInfo, wantInfo)
	}
	var types []v1.NodeConditionType
	for _, c := range st.Conditions {
		types = append(types, c.Type)
		if !c.LastHeartbeatTime.Time.Equal(t0) || !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s: times %v / %v, want %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime, t0)
		}
	}
	if !reflect.DeepEqual(types, ownConditions) {
		t.Errorf("condition order %v, want %v (Ready last)", types, ownConditions)
	}
	if !IsReady(st) {
		t.Errorf("not ready: %+v", conditionMap(st)[v1.NodeReady])
	}
	if len(st.Images) != 1 {
		t.Errorf("images %v", st.Images)
	}
}

func TestDesiredStatusConditions(t *testing.T) {
	type want struct {
		status v1.ConditionStatus
		reason string
		msg    string // substring
	}
	tests := []struct {
		name  string
		facts func(*Facts)
		want  map[v1.NodeConditionType]want
	}{
		{"healthy", func(*Facts) {}, map[v1.NodeConditionType]want{
			v1.NodeReady:          {v1.ConditionTrue, "KubeletReady", "posting ready status"},
			v1.NodeMemoryPressure: {v1.ConditionFalse, "KubeletHasSufficientMemory", ""},
			v1.NodeDiskPressure:   {v1.ConditionFalse, "KubeletHasNoDiskPressure", ""},
			v1.NodePIDPressure:    {v1.ConditionFalse, "KubeletHasSufficientPID", ""},
		}},
		{"runtime unhealthy", func(f *Facts) { f.RuntimeErrors = []string{"container runtime is down: boom"} }, map[v1.NodeConditionType]want{
			v1.NodeReady: {v1.ConditionFalse, "KubeletNotReady", "container runtime is down: boom"},
		}},
		{"two runtime errors", func(f *Facts) { f.RuntimeErrors = []string{"a", "b"} }, map[v1.NodeConditionType]want{
			v1.NodeReady: {v1.ConditionFalse, "KubeletNotReady", "a; b"},
		}},
		{"memory unknown: not ready, no pressure", func(f *Facts) { f.Machine.MemoryBytes = 0; f.MemoryAvailable = -1 }, map[v1.NodeConditionType]want{
			v1.NodeReady:          {v1.ConditionFalse, "KubeletNotReady", "missing node capacity for resources: memory"},
			v1.NodeMemoryPressure: {v1.ConditionFalse, "KubeletHasSufficientMemory", ""},
		}},
		{"memory pressure", func(f *Facts) { f.MemoryAvailable = 99 << 20 }, map[v1.NodeConditionType]want{
			v1.NodeMemoryPressure: {v1.ConditionTrue, "KubeletHasInsufficientMemory", ""},
			v1.NodeReady:          {v1.ConditionTrue, "KubeletReady", ""},
		}},
		{"memory at threshold: no pressure", func(f *Facts) { f.MemoryAvailable = 100 << 20 }, map[v1.NodeConditionType]want{
			v1.NodeMemoryPressure: {v1.ConditionFalse, "KubeletHasSufficientMemory", ""},
		}},
		{"disk pressure", func(f *Facts) { f.DiskPressure = true }, map[v1.NodeConditionType]want{
			v1.NodeDiskPressure: {v1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure"},
		}},
		{"pid pressure", func(f *Facts) { f.PIDsInUse, f.PIDsMax = 95, 100 }, map[v1.NodeConditionType]want{
			v1.NodePIDPressure: {v1.ConditionTrue, "KubeletHasInsufficientPID", ""},
		}},
		{"pids unknown", func(f *Facts) { f.PIDsInUse, f.PIDsMax = 0, 0 }, map[v1.NodeConditionType]want{
			v1.NodePIDPressure: {v1.ConditionFalse, "KubeletHasSufficientPID", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := healthyFacts()
			tt.facts(&f)
			got := conditionMap(DesiredStatus(testConfig(), f, v1.NodeStatus{}, t0))
			for typ, w := range tt.want {
				c := got[typ]
				if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.msg) {
					t.Errorf("%s = %s/%s/%q, want %s/%s/~%q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.msg)
				}
			}
		})
	}
}

func TestDesiredStatusKeepsWhatItDoesNotOwnOrKnow(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	old := DesiredStatus(testConfig(), healthyFacts(), v1.NodeStatus{}, earlier.Time)
	old.Conditions = append([]v1.NodeCondition{{Type: "KernelDeadlock", Status: v1.ConditionFalse, Reason: "KernelHasNoDeadlock"}}, old.Conditions...)
	old.Capacity["example.com/dongle"] = q("4")
	old.Allocatable["example.com/dongle"] = q("3")
	old.VolumesInUse = []v1.UniqueVolumeName{"vol"}

	f := healthyFacts()
	f.Machine.CPUs = 0           // unknown this time
	f.RuntimeVersion = ""        // unknown this time
	f.Machine.KernelVersion = "" // unknown this time
	f.Images = nil               // unknown this time
	f.DiskPressure = true        // a transition
	st := DesiredStatus(testConfig(), f, old, t0)

	if c := st.Capacity[v1.ResourceCPU]; c.Cmp(q("2")) != 0 {
		t.Errorf("cpu capacity %s: the old value should stay while unknown", c.String())
	}
	if c := st.Capacity["example.com/dongle"]; c.Cmp(q("4")) != 0 {
		t.Errorf("extended resource capacity lost: %v", st.Capacity)
	}
	if c := st.Allocatable["example.com/dongle"]; c.Cmp(q("4")) != 0 {
		t.Errorf("extended resource allocatable = %s, want capacity 4", c.String())
	}
	if st.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20" || st.NodeInfo.KernelVersion != "6.1.0" {
		t.Errorf("unknown nodeInfo fields were blanked: %+v", st.NodeInfo)
	}
	if len(st.Images) != 1 || len(st.VolumesInUse) != 1 {
		t.Errorf("images %v / volumes %v not kept", st.Images, st.VolumesInUse)
	}
	if !IsReady(st) {
		t.Errorf("should stay ready on the old cpu capacity")
	}
	conds := conditionMap(st)
	if _, ok := conds["KernelDeadlock"]; !ok || st.Conditions[0].Type != "KernelDeadlock" {
		t.Errorf("foreign condition lost or moved: %v", st.Conditions)
	}
	ready := conds[v1.NodeReady]
	if !ready.LastTransitionTime.Equal(&earlier) || !ready.LastHeartbeatTime.Time.Equal(t0) {
		t.Errorf("Ready unchanged: transition %v (want %v), heartbeat %v (want %v)", ready.LastTransitionTime, earlier, ready.LastHeartbeatTime, t0)
	}
	disk := conds[v1.NodeDiskPressure]
	if !disk.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("DiskPressure changed: transition %v, want %v", disk.LastTransitionTime, t0)
	}
	// The input was not modified.
	if conditionMap(old)[v1.NodeDiskPressure].Status != v1.ConditionFalse {
		t.Errorf("DesiredStatus modified its input")
	}
}

func TestAllocatableHugePagesAndFloor(t *testing.T) {
	f := healthyFacts()
	f.Machine.MemoryBytes = 1 << 30
	f.Machine.HugePages = map[int64]int64{2 << 20: 512 << 20, 1 << 30: 1 << 30}
	st := DesiredStatus(testConfig(), f, v1.NodeStatus{}, t0)
	if got := st.Capacity["hugepages-1Gi"]; got.Cmp(q("1Gi")) != 0 {
		t.Errorf("hugepages-1Gi %s", got.String())
	}
	if got := st.Capacity["hugepages-2Mi"]; got.Cmp(q("512Mi")) != 0 {
		t.Errorf("hugepages-2Mi %s", got.String())
	}
	if got := st.Allocatable[v1.ResourceMemory]; got.Sign() != 0 {
		t.Errorf("allocatable memory %s, want 0 (1Gi - 100Mi - 1.5Gi huge pages, floored)", got.String())
	}
}

func TestInitialNodeLabels(t *testing.T) {
	cfg := testConfig()
	cfg.Hostname = "host-a"
	cfg.Labels = map[string]string{"role": "edge", "kubernetes.io/arch": "arm64"}
	n := InitialNode(cfg, healthyFacts(), t0)
	want := map[string]string{
		"kubernetes.io/hostname": "host-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "role": "edge",
	}
	if !reflect.DeepEqual(n.Labels, want) {
		t.Errorf("labels %v, want %v", n.Labels, want)
	}
	if n.Name != "n1" || n.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
		t.Errorf("name %q annotations %v", n.Name, n.Annotations)
	}
	if !IsReady(n.Status) {
		t.Errorf("initial node carries no ready status")
	}
}

func TestReconcileExisting(t *testing.T) {
	cfg := testConfig()
	cfg.Labels = map[string]string{"role": "edge"}
	tests := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		changed     bool
		wantLabels  map[string]string
	}{
		{
			name:        "up to date",
			labels:      map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "role": "changed-by-admin"},
			annotations: map[string]string{AnnotationControllerManagedAttachDetach: "true"},
			wantLabels:  map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "role": "changed-by-admin"},
		},
		{
			name:       "no labels at all: defaults come back, --node-labels do not",
			changed:    true,
			wantLabels: map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"},
		},
		{
			name:        "wrong arch",
			labels:      map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "x": "y"},
			annotations: map[string]string{AnnotationControllerManagedAttachDetach: "true"},
			changed:     true,
			wantLabels:  map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "x": "y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: tt.labels, Annotations: tt.annotations}}
			before := existing.DeepCopy()
			got, changed := ReconcileExisting(existing, cfg)
			if changed != tt.changed {
				t.Errorf("changed %v, want %v", changed, tt.changed)
			}
			if !reflect.DeepEqual(got.Labels, tt.wantLabels) {
				t.Errorf("labels %v, want %v", got.Labels, tt.wantLabels)
			}
			if got.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
				t.Errorf("annotations %v", got.Annotations)
			}
			if !reflect.DeepEqual(existing, before) {
				t.Errorf("input modified")
			}
		})
	}
}

func TestNodeImages(t *testing.T) {
	var many []RuntimeImage
	for i := 0; i < 60; i++ {
		many = append(many, RuntimeImage{Names: []string{"img"}, SizeBytes: int64(i)})
	}
	tests := []struct {
		name  string
		in    []RuntimeImage
		check func(t *testing.T, out []v1.ContainerImage)
	}{
		{"none is empty, not nil", nil, func(t *testing.T, out []v1.ContainerImage) {
			if out == nil || len(out) != 0 {
				t.Errorf("%v", out)
			}
		}},
		{"largest first, nameless dropped, names capped", []RuntimeImage{
			{Names: []string{"small"}, SizeBytes: 1},
			{SizeBytes: 100},
			{Names: []string{"a", "b", "c", "d", "e", "f"}, SizeBytes: 50},
		}, func(t *testing.T, out []v1.ContainerImage) {
			want := []v1.ContainerImage{{Names: []string{"a", "b", "c", "d", "e"}, SizeBytes: 50}, {Names: []string{"small"}, SizeBytes: 1}}
			if !reflect.DeepEqual(out, want) {
				t.Errorf("%v, want %v", out, want)
			}
		}},
		{"at most 50", many, func(t *testing.T, out []v1.ContainerImage) {
			if len(out) != 50 || out[0].SizeBytes != 59 || out[49].SizeBytes != 10 {
				t.Errorf("len %d first %d last %d", len(out), out[0].SizeBytes, out[len(out)-1].SizeBytes)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, NodeImages(tt.in)) })
	}
}

func TestInitialNodeTaints(t *testing.T) {
	cfg := testConfig()
	cfg.Taints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}, {Key: "gpu", Effect: v1.TaintEffectNoExecute}}
	n := InitialNode(cfg, healthyFacts(), t0)
	if !reflect.DeepEqual(n.Spec.Taints, cfg.Taints) {
		t.Errorf("taints %v, want %v", n.Spec.Taints, cfg.Taints)
	}
	n.Spec.Taints[0].Value = "changed"
	if cfg.Taints[0].Value != "infra" {
		t.Error("the node shares its taints with the config")
	}
	// As upstream: an existing Node's taints are the cluster's, not re-applied.
	existing := InitialNode(testConfig(), healthyFacts(), t0)
	if out, _ := ReconcileExisting(existing, cfg); len(out.Spec.Taints) != 0 {
		t.Errorf("taints re-applied to an existing node: %v", out.Spec.Taints)
	}
}
