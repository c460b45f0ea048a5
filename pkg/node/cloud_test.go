package node

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

var uninitialized = v1.Taint{Key: TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}

// TestInitialNodeRegistration: what the created Node carries for the
// registration flags, as upstream's initialNode.
func TestInitialNodeRegistration(t *testing.T) {
	own := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoExecute}
	for _, tt := range []struct {
		name            string
		mutate          func(*Config)
		wantTaints      []v1.Taint
		wantProviderID  string
		wantProvidedIP  string // "" = no annotation
		wantAddressesIn []v1.NodeAddress
	}{
		{"no cloud provider", func(c *Config) {}, nil, "", "",
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1"}}},
		{"taints only", func(c *Config) { c.Taints = []v1.Taint{own} }, []v1.Taint{own}, "", "",
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1"}}},
		{"provider id without cloud provider", func(c *Config) { c.ProviderID = "kind://docker/n1" }, nil, "kind://docker/n1", "",
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1"}}},
		// The uninitialized taint comes after the operator's, as upstream.
		{"external, --node-ip given", func(c *Config) {
			c.ExternalCloudProvider, c.NodeIPGiven, c.Taints, c.ProviderID = true, true, []v1.Taint{own}, "aws:///eu-west-1a/i-0abc"
		}, []v1.Taint{own, uninitialized}, "aws:///eu-west-1a/i-0abc", "10.0.0.5",
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1"}}},
		{"external, dual-stack --node-ip", func(c *Config) {
			c.ExternalCloudProvider, c.NodeIPGiven, c.NodeIPs = true, true, []string{"10.0.0.5", "fd00::5"}
		}, []v1.Taint{uninitialized}, "", "10.0.0.5,fd00::5",
			[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"}, {Type: v1.NodeHostName, Address: "n1"}}},
		// A detected IP is not announced: the provider sets the addresses.
		{"external, IP detected", func(c *Config) { c.ExternalCloudProvider = true }, []v1.Taint{uninitialized}, "", "",
			[]v1.NodeAddress{{Type: v1.NodeHostName, Address: "n1"}}},
		// Asked for explicitly as well: not twice.
		{"external, taint also given", func(c *Config) {
			c.ExternalCloudProvider, c.Taints = true, []v1.Taint{uninitialized}
		}, []v1.Taint{uninitialized}, "", "", []v1.NodeAddress{{Type: v1.NodeHostName, Address: "n1"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mutate(&cfg)
			n := InitialNode(cfg, healthyFacts(), t0)
			if !reflect.DeepEqual(n.Spec.Taints, tt.wantTaints) {
				t.Errorf("taints %v, want %v", n.Spec.Taints, tt.wantTaints)
			}
			if n.Spec.ProviderID != tt.wantProviderID {
				t.Errorf("providerID %q, want %q", n.Spec.ProviderID, tt.wantProviderID)
			}
			got, ok := n.Annotations[AnnotationProvidedNodeIP]
			if ok != (tt.wantProvidedIP != "") || got != tt.wantProvidedIP {
				t.Errorf("provided-node-ip annotation %q (set %v), want %q", got, ok, tt.wantProvidedIP)
			}
			if n.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
				t.Errorf("annotations %v lack the attach/detach one", n.Annotations)
			}
			if !reflect.DeepEqual(n.Status.Addresses, tt.wantAddressesIn) {
				t.Errorf("addresses %v, want %v", n.Status.Addresses, tt.wantAddressesIn)
			}
		})
	}
}

// TestDesiredStatusKeepsCloudAddresses: with an external cloud provider the
// addresses the provider set stay; without one nodelet's own replace them.
func TestDesiredStatusKeepsCloudAddresses(t *testing.T) {
	cloud := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "172.31.0.9"}, {Type: v1.NodeExternalIP, Address: "3.3.3.3"},
		{Type: v1.NodeInternalDNS, Address: "ip-172-31-0-9.ec2.internal"}}
	cfg := testConfig()
	cfg.ExternalCloudProvider, cfg.NodeIPGiven = true, true
	if got := DesiredStatus(cfg, healthyFacts(), v1.NodeStatus{Addresses: cloud}, t0).Addresses; !reflect.DeepEqual(got, cloud) {
		t.Errorf("external: addresses %v, want the provider's %v", got, cloud)
	}
	cfg.ExternalCloudProvider = false
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "n1"}}
	if got := DesiredStatus(cfg, healthyFacts(), v1.NodeStatus{Addresses: cloud}, t0).Addresses; !reflect.DeepEqual(got, want) {
		t.Errorf("no cloud provider: addresses %v, want nodelet's %v", got, want)
	}
}

// TestReconcileExistingProvidedIP: an existing Node gets the provided IP
// annotation when it should have it and loses a stale one; its taints and
// providerID are left alone (set at creation only, as upstream).
func TestReconcileExistingProvidedIP(t *testing.T) {
	cfg := testConfig()
	cfg.ExternalCloudProvider, cfg.NodeIPGiven, cfg.ProviderID = true, true, "aws:///x"
	existing := InitialNode(testConfig(), healthyFacts(), t0)
	out, changed := ReconcileExisting(existing, cfg)
	if !changed || out.Annotations[AnnotationProvidedNodeIP] != "10.0.0.5" {
		t.Errorf("changed %v, annotations %v: want the provided IP added", changed, out.Annotations)
	}
	if len(out.Spec.Taints) != 0 || out.Spec.ProviderID != "" {
		t.Errorf("spec %+v changed on an existing Node", out.Spec)
	}

	stale := InitialNode(cfg, healthyFacts(), t0)
	out, changed = ReconcileExisting(stale, testConfig())
	if _, ok := out.Annotations[AnnotationProvidedNodeIP]; !changed || ok {
		t.Errorf("changed %v, annotations %v: want the stale provided IP removed", changed, out.Annotations)
	}
	if _, changed := ReconcileExisting(stale, cfg); changed {
		t.Error("a Node already as wanted reported changed")
	}
}
