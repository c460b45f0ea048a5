package version

import (
	"os"
	"regexp"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// kubeadmRE is the expression kubeadm v1.37's preflight parses the output
// of `kubelet --version` with (it must match the whole output, trimmed).
var kubeadmRE = regexp.MustCompile(`^\s*Kubernetes v((0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)([-\w.+]*)?)\s*$`)

func TestString(t *testing.T) {
	defer func(k, n string) { kubernetes, nodelet = k, n }(kubernetes, nodelet)
	kubernetes = "v1.37.2"
	for _, tt := range []struct{ nodelet, want string }{
		{"v0.1.0-dev", "v1.37.2+nodelet.0.1.0-dev"},
		{"0.2.0", "v1.37.2+nodelet.0.2.0"},
		{"v0.2.0-3-gabc1234+dirty", "v1.37.2+nodelet.0.2.0-3-gabc1234-dirty"},
		{"v1..2", "v1.37.2+nodelet.1.2"},
		{"v_/", "v1.37.2+nodelet.-"},
		{"", "v1.37.2+nodelet"},
	} {
		nodelet = tt.nodelet
		got := String()
		if got != tt.want {
			t.Errorf("nodelet %q: String() = %q, want %q", tt.nodelet, got, tt.want)
		}
		// What the skew checks of kubeadm and the version skew policy see:
		// v1.37.2, whatever nodelet's own version is.
		v, err := utilversion.ParseSemantic(got)
		if err != nil {
			t.Errorf("nodelet %q: %q is not semver: %v", tt.nodelet, got, err)
			continue
		}
		if v.Major() != 1 || v.Minor() != 37 || v.Patch() != 2 || v.PreRelease() != "" {
			t.Errorf("%q parses as %v, want v1.37.2 with build metadata only", got, v)
		}
		if cmp, _ := v.Compare("v1.37.2"); cmp != 0 {
			t.Errorf("%q compares %d with v1.37.2, want equal", got, cmp)
		}
		m := kubeadmRE.FindAllStringSubmatch(VersionLine()+"\n", -1)
		if len(m) != 1 || m[0][1] != strings.TrimPrefix(got, "v") {
			t.Errorf("kubeadm cannot parse %q: %v", VersionLine(), m)
		}
	}
}

func TestMajorMinor(t *testing.T) {
	defer func(k string) { kubernetes = k }(kubernetes)
	for in, want := range map[string]string{"v1.37.2": "1.37", "v1.40.0-alpha.1": "1.40", "v2": "2"} {
		kubernetes = in
		if got := MajorMinor(); got != want {
			t.Errorf("MajorMinor() of %q = %q, want %q", in, got, want)
		}
	}
}

func TestUserAgent(t *testing.T) {
	if ua := UserAgent(); !strings.HasPrefix(ua, "nodelet/"+String()+" (") {
		t.Errorf("UserAgent() = %q", ua)
	}
}

// TestKubernetesFollowsAPIModule: the Kubernetes version nodelet reports is
// the release of the k8s.io/api module it is built with (v0.37.2 ->
// v1.37.2), so bumping the module without the version fails here.
func TestKubernetesFollowsAPIModule(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api (v0\.\d+\.\d+)\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod does not require k8s.io/api")
	}
	if want := "v1." + strings.TrimPrefix(string(m[1]), "v0."); Kubernetes() != want {
		t.Errorf("Kubernetes() = %q, but go.mod requires k8s.io/api %s: want %q", Kubernetes(), m[1], want)
	}
}
