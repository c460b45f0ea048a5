package layout

import "testing"

func TestPaths(t *testing.T) {
	const root = "/var/lib/nodelet"
	for _, tc := range []struct{ got, want string }{
		{PodsDir(root), "/var/lib/nodelet/pods"},
		{PodDir(root, "u"), "/var/lib/nodelet/pods/u"},
		{VolumesDir(root, "u"), "/var/lib/nodelet/pods/u/volumes"},
		{PluginDir(root, "u", PluginSecret), "/var/lib/nodelet/pods/u/volumes/kubernetes.io~secret"},
		{VolumeDir(root, "u", PluginProjected, "v"), "/var/lib/nodelet/pods/u/volumes/kubernetes.io~projected/v"},
		{EmptyDir(root, "u", "cache"), "/var/lib/nodelet/pods/u/volumes/kubernetes.io~empty-dir/cache"},
		{SubpathsDir(root, "u"), "/var/lib/nodelet/pods/u/volume-subpaths"},
		{SubpathTarget(root, "u", "v", "c", 2), "/var/lib/nodelet/pods/u/volume-subpaths/v/c/2"},
		{ContainerDir(root, "u", "c"), "/var/lib/nodelet/pods/u/containers/c"},
		{EtcHostsFile(root, "u"), "/var/lib/nodelet/pods/u/etc-hosts"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}
