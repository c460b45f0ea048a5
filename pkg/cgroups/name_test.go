package cgroups

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseRoot(t *testing.T) {
	tests := []struct {
		driver, root string
		want         Name
		err          bool
	}{
		{DriverCgroupfs, "", Name{}, false},
		{DriverCgroupfs, "/", Name{}, false},
		{DriverCgroupfs, "/a/b", Name{"a", "b"}, false},
		{DriverCgroupfs, "/a/b/", Name{"a", "b"}, false},
		{DriverCgroupfs, "a/b", nil, true},
		{DriverSystemd, "/", Name{}, false},
		{DriverSystemd, "/a.slice/a-b.slice", Name{"a", "b"}, false},
		{DriverSystemd, "a-b.slice", nil, true}, // not absolute
		{DriverSystemd, "/a-b.slice", Name{"a", "b"}, false},
		{DriverSystemd, "/x_y.slice", Name{"x-y"}, false},
		{DriverSystemd, "/a/b", nil, true},
		{"other", "/a", nil, true},
	}
	for _, tc := range tests {
		got, err := ParseRoot(tc.driver, tc.root)
		if (err != nil) != tc.err || !tc.err && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseRoot(%s, %q) = %v, %v; want %v (error %v)", tc.driver, tc.root, got, err, tc.want, tc.err)
		}
	}
}

func TestPodPaths(t *testing.T) {
	const uid = "1f2e-3d"
	tests := []struct {
		root     Name
		qos      v1.PodQOSClass
		cgroupfs string
		systemd  string
		unit     string
	}{
		{Name{}, v1.PodQOSGuaranteed, "/kubepods/pod1f2e-3d",
			"/kubepods.slice/kubepods-pod1f2e_3d.slice", "kubepods-pod1f2e_3d.slice"},
		{Name{}, v1.PodQOSBurstable, "/kubepods/burstable/pod1f2e-3d",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e_3d.slice", "kubepods-burstable-pod1f2e_3d.slice"},
		{Name{}, v1.PodQOSBestEffort, "/kubepods/besteffort/pod1f2e-3d",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1f2e_3d.slice", "kubepods-besteffort-pod1f2e_3d.slice"},
		{Name{"node", "x-1"}, v1.PodQOSBestEffort, "/node/x-1/kubepods/besteffort/pod1f2e-3d",
			"/node.slice/node-x_1.slice/node-x_1-kubepods.slice/node-x_1-kubepods-besteffort.slice/node-x_1-kubepods-besteffort-pod1f2e_3d.slice",
			"node-x_1-kubepods-besteffort-pod1f2e_3d.slice"},
	}
	for _, tc := range tests {
		n := PodName(tc.root, tc.qos, uid)
		if got := CgroupfsPath(n); got != tc.cgroupfs {
			t.Errorf("%v %s cgroupfs: %s, want %s", tc.root, tc.qos, got, tc.cgroupfs)
		}
		if got := DriverPath(DriverCgroupfs, n); got != tc.cgroupfs {
			t.Errorf("%v %s DriverPath(cgroupfs): %s", tc.root, tc.qos, got)
		}
		if got := SystemdPath(n); got != tc.systemd {
			t.Errorf("%v %s systemd: %s, want %s", tc.root, tc.qos, got, tc.systemd)
		}
		if got := DriverPath(DriverSystemd, n); got != tc.systemd {
			t.Errorf("%v %s DriverPath(systemd): %s", tc.root, tc.qos, got)
		}
		if got := SystemdUnit(n); got != tc.unit {
			t.Errorf("%v %s unit: %s, want %s", tc.root, tc.qos, got, tc.unit)
		}
	}
	if got := SystemdPath(Name{}); got != "/" {
		t.Errorf("systemd root: %s", got)
	}
	if got := CgroupfsPath(PodsName(Name{})); got != "/kubepods" {
		t.Errorf("kubepods: %s", got)
	}
}

func TestPodUIDFromName(t *testing.T) {
	tests := []struct {
		in    string
		uid   string
		isUID bool
	}{
		{"pod1234-abcd", "1234-abcd", true},
		{"podabc_def", "abc_def", true},
		{"pod", "", false},
		{"burstable", "", false},
		{"besteffort", "", false},
		{"pod..", "", false},
		{"0123456789abcdef", "", false}, // a container's cgroup
	}
	for _, tc := range tests {
		uid, ok := PodUIDFromName(tc.in)
		if ok != tc.isUID || string(uid) != tc.uid {
			t.Errorf("PodUIDFromName(%q) = %q, %v", tc.in, uid, ok)
		}
	}
}
