package options

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestValidateAllocatable(t *testing.T) {
	stubHostname(t, "host")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--kube-reserved=cpu=100m,memory=1Gi,ephemeral-storage=1Gi,pid=100", "--system-reserved=memory=500Mi"}, ""},
		{[]string{"--kube-reserved=gpu=1"}, `--kube-reserved (kubeReserved): cannot reserve "gpu" resource`},
		{[]string{"--system-reserved=memory=-1Gi"}, `resource quantity for "memory" cannot be negative`},
		{[]string{"--system-reserved=memory=lots"}, `bad quantity "lots"`},
		{[]string{"--eviction-hard=memory.available<1Gi,nodefs.available<5%"}, ""},
		{[]string{"--eviction-hard=memory.free<1Gi"}, `unknown signal "memory.free"`},
		{[]string{"--enforce-node-allocatable=pods,system-reserved"}, "systemReservedCgroup (--system-reserved-cgroup) must be specified"},
		{[]string{"--enforce-node-allocatable=kube-reserved"}, "kubeReservedCgroup (--kube-reserved-cgroup) must be specified"},
		{[]string{"--enforce-node-allocatable=pods,kube-reserved,system-reserved", "--kube-reserved-cgroup=/kube", "--system-reserved-cgroup=/system"}, ""},
		{[]string{"--enforce-node-allocatable=none,pods"}, `may not contain additional enforcements when "none" is specified`},
		{[]string{"--enforce-node-allocatable=nodes"}, `option "nodes" specified for enforceNodeAllocatable`},
		{[]string{"--enforce-node-allocatable=kube-reserved-compressible", "--kube-reserved-cgroup=/kube"}, "is not supported by nodelet"},
		{[]string{"--cgroups-per-qos=false"}, "is not supported unless cgroupsPerQOS (--cgroups-per-qos) is true"},
		{[]string{"--cgroups-per-qos=false", "--enforce-node-allocatable=none"}, ""},
		{[]string{"--kube-reserved-cgroup=kube"}, `--kube-reserved-cgroup ("kube") must be an absolute cgroup path`},
	}
	for _, tc := range tests {
		_, _, err := resolveArgs(t, "", tc.args...)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestEvictionHardFlagSyntax(t *testing.T) {
	fs := NewFlagSet("nodelet")
	err := fs.Parse([]string{"--eviction-hard=memory.available>1Gi"})
	if err == nil || !strings.Contains(err.Error(), "want signal<value") {
		t.Errorf("err %v", err)
	}
}

func TestAllocatableFlags(t *testing.T) {
	stubHostname(t, "host")
	o, _, err := resolveArgs(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.EnforceNodeAllocatable, []string{"pods"}) || o.EvictionHard["memory.available"] != "100Mi" ||
		o.EvictionHard["nodefs.available"] != "10%" || o.EvictionHard["imagefs.available"] != "15%" || o.EvictionHard["nodefs.inodesFree"] != "5%" {
		t.Errorf("defaults: enforce %v, evictionHard %v", o.EnforceNodeAllocatable, o.EvictionHard)
	}
	// The flag replaces the default map, repeating it adds to it.
	o, _, err = resolveArgs(t, "", "--eviction-hard=memory.available<1Gi", "--eviction-hard=nodefs.available<1%", "--kube-reserved=cpu=1", "--kube-reserved=memory=1Gi")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"memory.available": "1Gi", "nodefs.available": "1%"}; !maps.Equal(o.EvictionHard, want) {
		t.Errorf("evictionHard %v, want %v", o.EvictionHard, want)
	}
	if want := map[string]string{"cpu": "1", "memory": "1Gi"}; !maps.Equal(o.KubeReserved, want) {
		t.Errorf("kubeReserved %v, want %v", o.KubeReserved, want)
	}
	// A flag overrides the file's map.
	o, _, err = resolveArgs(t, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: {memory.available: 2Gi}\nsystemReserved: {cpu: 500m}\n", "--system-reserved=memory=1Gi")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(o.EvictionHard, map[string]string{"memory.available": "2Gi"}) || !maps.Equal(o.SystemReserved, map[string]string{"memory": "1Gi"}) {
		t.Errorf("file+flag: evictionHard %v systemReserved %v", o.EvictionHard, o.SystemReserved)
	}
}
