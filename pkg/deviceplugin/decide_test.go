package deviceplugin

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func TestValidateRegistration(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *pluginapi.RegisterRequest
		ok   bool
	}{
		{"good", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/resource", Endpoint: "dp.sock"}, true},
		{"old version", &pluginapi.RegisterRequest{Version: "v1alpha", ResourceName: "example.com/resource", Endpoint: "dp.sock"}, false},
		{"native name", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "cpu", Endpoint: "dp.sock"}, false},
		{"kubernetes.io domain", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "kubernetes.io/gpu", Endpoint: "dp.sock"}, false},
		{"requests. prefix", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "requests.example.com/x", Endpoint: "dp.sock"}, false},
		{"bad name", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/a b", Endpoint: "dp.sock"}, false},
		{"endpoint path", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/resource", Endpoint: "../x.sock"}, false},
		{"endpoint absolute", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/resource", Endpoint: "/tmp/x.sock"}, false},
		{"endpoint empty", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/resource"}, false},
		{"endpoint dotdot", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/resource", Endpoint: ".."}, false},
		{"endpoint is registration socket", &pluginapi.RegisterRequest{Version: "v1beta1", ResourceName: "example.com/resource", Endpoint: "kubelet.sock"}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRegistration(tc.req)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateRegistration = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestNodeCounts(t *testing.T) {
	now := time.Unix(10000, 0)
	got, expired := NodeCounts(map[string]ResourceState{
		"a.com/serving":   {Healthy: []string{"1", "2"}, Unhealthy: []string{"3"}},
		"a.com/stopped":   {Unhealthy: []string{"1", "2"}, Stopped: now.Add(-time.Minute)},
		"a.com/expired":   {Unhealthy: []string{"1"}, Stopped: now.Add(-EndpointStopGracePeriod)},
		"a.com/nodevices": {},
	}, now)
	want := map[v1.ResourceName]Counts{
		"a.com/serving":   {Capacity: 3, Allocatable: 2},
		"a.com/stopped":   {Capacity: 2, Allocatable: 0},
		"a.com/expired":   {},
		"a.com/nodevices": {},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(expired, []string{"a.com/expired"}) {
		t.Errorf("expired = %v", expired)
	}
}

func TestFreeAndPick(t *testing.T) {
	for _, tc := range []struct {
		name      string
		healthy   []string
		allocated map[string]bool
		n         int
		preferred []string
		want      []string
		fails     bool
	}{
		{name: "sorted first", healthy: []string{"c", "a", "b"}, n: 2, want: []string{"a", "b"}},
		{name: "skips allocated", healthy: []string{"a", "b", "c"}, allocated: map[string]bool{"a": true}, n: 2, want: []string{"b", "c"}},
		{name: "preferred first", healthy: []string{"a", "b", "c"}, n: 2, preferred: []string{"c"}, want: []string{"c", "a"}},
		{name: "preferred but allocated ignored", healthy: []string{"a", "b", "c"}, allocated: map[string]bool{"c": true}, n: 1, preferred: []string{"c", "x"}, want: []string{"a"}},
		{name: "too many", healthy: []string{"a", "b"}, allocated: map[string]bool{"b": true}, n: 2, fails: true},
		{name: "none asked", healthy: []string{"a"}, n: 0, want: nil},
		{name: "duplicates counted once", healthy: []string{"a", "a"}, n: 2, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Pick("r", Free(tc.healthy, tc.allocated), tc.n, tc.preferred)
			if (err != nil) != tc.fails {
				t.Fatalf("Pick error = %v, want failure %v", err, tc.fails)
			}
			if !tc.fails && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Pick = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPickMessageIsUpstreams(t *testing.T) {
	_, err := Pick("example.com/resource", []string{"a"}, 3, nil)
	want := "requested number of devices unavailable for example.com/resource. Requested: 3, Available: 1"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestDeviceRequests(t *testing.T) {
	known := func(n string) bool { return n == "example.com/r" }
	c := func(l v1.ResourceList) *v1.Container {
		return &v1.Container{Name: "c", Resources: v1.ResourceRequirements{Limits: l}}
	}
	for _, tc := range []struct {
		name  string
		c     *v1.Container
		want  map[string]int
		fails bool
	}{
		{"none", c(nil), map[string]int{}, false},
		{"known", c(v1.ResourceList{"example.com/r": resource.MustParse("2"), v1.ResourceCPU: resource.MustParse("1")}), map[string]int{"example.com/r": 2}, false},
		{"unknown ignored", c(v1.ResourceList{"other.com/r": resource.MustParse("2")}), map[string]int{}, false},
		{"zero", c(v1.ResourceList{"example.com/r": resource.MustParse("0")}), map[string]int{}, false},
		{"fraction", c(v1.ResourceList{"example.com/r": resource.MustParse("500m")}), nil, true},
		{"huge", c(v1.ResourceList{"example.com/r": resource.MustParse("1e12")}), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DeviceRequests(tc.c, known)
			if (err != nil) != tc.fails {
				t.Fatalf("error = %v, want failure %v", err, tc.fails)
			}
			if !tc.fails && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("= %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsExtendedResourceName(t *testing.T) {
	for name, want := range map[string]bool{
		"example.com/resource": true, "nvidia.com/gpu": true, "cpu": false, "memory": false,
		"kubernetes.io/x": false, "hugepages-2Mi": false, "example.com/": false, "/x": false,
	} {
		if got := IsExtendedResourceName(name); got != want {
			t.Errorf("IsExtendedResourceName(%q) = %v, want %v", name, got, want)
		}
	}
}
