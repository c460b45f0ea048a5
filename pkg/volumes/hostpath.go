package volumes

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// hostPathPlugin makes hostPath volumes: the node's own path, created for
// the ...OrCreate types and checked for the others. Nothing is mounted, so
// there is nothing to tear down.
type hostPathPlugin struct{}

func (hostPathPlugin) Name() string                              { return "hostPath" }
func (hostPathPlugin) CanSupport(v *v1.Volume) bool              { return v.HostPath != nil }
func (hostPathPlugin) Check(*v1.Pod, *v1.Volume) error           { return nil }
func (hostPathPlugin) TearDown(context.Context, types.UID) error { return nil }

func (hostPathPlugin) SetUp(_ context.Context, _ *v1.Pod, v *v1.Volume, path string) error {
	if err := checkHostPath(path, hostPathType(v)); err != nil {
		return fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return nil
}

// hostPathType returns how a hostPath volume's path must be checked or
// created before use.
func hostPathType(v *v1.Volume) v1.HostPathType {
	if v.HostPath == nil || v.HostPath.Type == nil {
		return v1.HostPathUnset
	}
	return *v.HostPath.Type
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
