package cleanup

import (
	"reflect"
	"testing"
)

func TestDecide(t *testing.T) {
	const dir = "/var/lib/kubelet/pods/u1"
	tmpfs := func(p string) Mount { return Mount{Point: p, FSType: "tmpfs", Source: "tmpfs"} }
	ext4 := func(p string) Mount { return Mount{Point: p, FSType: "ext4", Source: "/dev/sda1"} }
	refused := func(m Mount, reason string) Refusal { return Refusal{Mount: m, Reason: reason} }
	tests := []struct {
		name    string
		mounts  []Mount
		unmount []string
		refused []Refusal
	}{
		{name: "nothing mounted"},
		{
			name:   "mounts outside the directory are ignored",
			mounts: []Mount{ext4("/"), tmpfs("/var/lib/kubelet/pods/u10/volumes/kubernetes.io~secret/s"), ext4("/var/lib/kubelet")},
		},
		{
			name:    "tmpfs volumes are nodelet's",
			mounts:  []Mount{tmpfs(dir + "/volumes/kubernetes.io~secret/s"), tmpfs(dir + "/volumes/kubernetes.io~projected/kube-api-access-x")},
			unmount: []string{dir + "/volumes/kubernetes.io~secret/s", dir + "/volumes/kubernetes.io~projected/kube-api-access-x"},
		},
		{
			name:    "subPath bind mounts are nodelet's, whatever their filesystem",
			mounts:  []Mount{ext4(dir + "/volume-subpaths/data/app/0"), tmpfs(dir + "/volume-subpaths/cfg/sidecar/1")},
			unmount: []string{dir + "/volume-subpaths/data/app/0", dir + "/volume-subpaths/cfg/sidecar/1"},
		},
		{
			name:    "persistent volume bind mounts are nodelet's, whatever their filesystem",
			mounts:  []Mount{ext4(dir + "/volumes/kubernetes.io~local-volume/data")},
			unmount: []string{dir + "/volumes/kubernetes.io~local-volume/data"},
		},
		{
			name:    "something mounted deeper in a persistent volume is refused",
			mounts:  []Mount{ext4(dir + "/volumes/kubernetes.io~local-volume/data/x")},
			refused: []Refusal{refused(ext4(dir+"/volumes/kubernetes.io~local-volume/data/x"), reasonForeign)},
		},
		{
			name:    "a non-tmpfs volume (another kubelet's NFS) is refused",
			mounts:  []Mount{{Point: dir + "/volumes/kubernetes.io~nfs/data", FSType: "nfs4", Source: "srv:/export"}},
			refused: []Refusal{refused(Mount{Point: dir + "/volumes/kubernetes.io~nfs/data", FSType: "nfs4", Source: "srv:/export"}, reasonForeign)},
		},
		{
			name:    "a CSI mount one level deeper is refused even as tmpfs",
			mounts:  []Mount{tmpfs(dir + "/volumes/kubernetes.io~csi/pv/mount")},
			refused: []Refusal{refused(tmpfs(dir+"/volumes/kubernetes.io~csi/pv/mount"), reasonForeign)},
		},
		{
			name:    "a mount on the pod directory itself is refused",
			mounts:  []Mount{ext4(dir)},
			refused: []Refusal{refused(ext4(dir), reasonForeign)},
		},
		{
			name:    "plugin dir without a plugin name is not a volume",
			mounts:  []Mount{tmpfs(dir + "/volumes/kubernetes.io~/x")},
			refused: []Refusal{refused(tmpfs(dir+"/volumes/kubernetes.io~/x"), reasonForeign)},
		},
		{
			name:    "volume-subpaths itself is not a subPath mount",
			mounts:  []Mount{ext4(dir + "/volume-subpaths")},
			refused: []Refusal{refused(ext4(dir+"/volume-subpaths"), reasonForeign)},
		},
		{
			name:   "own mount holding a foreign one is refused, not detached",
			mounts: []Mount{tmpfs(dir + "/volumes/kubernetes.io~secret/s"), ext4(dir + "/volumes/kubernetes.io~secret/s/x")},
			refused: []Refusal{
				refused(tmpfs(dir+"/volumes/kubernetes.io~secret/s"), reasonHoldsOther),
				refused(ext4(dir+"/volumes/kubernetes.io~secret/s/x"), reasonForeign),
			},
		},
		{
			name:   "own mount inside a foreign one is refused",
			mounts: []Mount{ext4(dir + "/volumes"), tmpfs(dir + "/volumes/kubernetes.io~secret/s")},
			refused: []Refusal{
				refused(ext4(dir+"/volumes"), reasonForeign),
				refused(tmpfs(dir+"/volumes/kubernetes.io~secret/s"), reasonUnderOther),
			},
		},
		{
			name:    "own mount stacked on a foreign one is refused",
			mounts:  []Mount{ext4(dir + "/volumes/kubernetes.io~secret/s"), tmpfs(dir + "/volumes/kubernetes.io~secret/s")},
			refused: []Refusal{refused(ext4(dir+"/volumes/kubernetes.io~secret/s"), reasonForeign)},
		},
		{
			name:    "stacked own mounts are unmounted once each, deepest first",
			mounts:  []Mount{tmpfs(dir + "/volume-subpaths/v/c/0"), tmpfs(dir + "/volume-subpaths/v/c/0"), tmpfs(dir + "/volume-subpaths/v/c/0/deeper")},
			unmount: []string{dir + "/volume-subpaths/v/c/0/deeper", dir + "/volume-subpaths/v/c/0", dir + "/volume-subpaths/v/c/0"},
		},
		{
			name:    "a sibling with the same prefix is not below the directory",
			mounts:  []Mount{ext4(dir + "0/volumes/x")},
			unmount: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(dir, tt.mounts)
			if !reflect.DeepEqual(got.Unmount, tt.unmount) {
				t.Errorf("Unmount = %q, want %q", got.Unmount, tt.unmount)
			}
			if !reflect.DeepEqual(got.Refused, tt.refused) {
				t.Errorf("Refused = %+v, want %+v", got.Refused, tt.refused)
			}
		})
	}
}
