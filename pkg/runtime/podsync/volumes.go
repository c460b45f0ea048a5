package podsync

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime/cri"
)

// prepareVolumes makes the node side of a pod's volumes exist: emptyDir
// directories, and hostPath paths per their type (created for ...OrCreate,
// checked otherwise). Unsupported volume types were rejected before.
func prepareVolumes(pod *v1.Pod, opts cri.ConfigOptions) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		path, err := cri.VolumeHostPath(pod, v, opts)
		if err != nil {
			return err
		}
		if v.EmptyDir != nil {
			// World-writable like upstream: containers may run as any user.
			if err := os.MkdirAll(path, 0o777); err != nil {
				return fmt.Errorf("volume %q: %w", v.Name, err)
			}
			if err := os.Chmod(path, 0o777); err != nil {
				return fmt.Errorf("volume %q: %w", v.Name, err)
			}
			continue
		}
		if err := checkHostPath(path, cri.HostPathType(v)); err != nil {
			return fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	return nil
}

func checkHostPath(path string, typ v1.HostPathType) error {
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		return os.MkdirAll(path, 0o755)
	case v1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("hostPath type %s: %w", typ, err)
	}
	var ok bool
	switch typ {
	case v1.HostPathDirectory:
		ok = fi.IsDir()
	case v1.HostPathFile:
		ok = fi.Mode().IsRegular()
	case v1.HostPathSocket:
		ok = fi.Mode()&fs.ModeSocket != 0
	case v1.HostPathCharDev:
		ok = fi.Mode()&fs.ModeCharDevice != 0
	case v1.HostPathBlockDev:
		ok = fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0
	default:
		return fmt.Errorf("hostPath type %q unknown", typ)
	}
	if !ok {
		return fmt.Errorf("hostPath %s is not of type %s", path, typ)
	}
	return nil
}
