//go:build e2e

package framework

import (
	"errors"
	"fmt"
	"slices"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MountsUnder lists the mount points strictly below dir, deepest first.
func MountsUnder(dir string) ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range infos {
		if m.Mountpoint != dir {
			out = append(out, m.Mountpoint)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

// UnmountAll detaches every mount below dir, deepest first: a test's
// fixture cleanup, so that removing its temp dir never deletes through a
// mount what belongs to the node.
func UnmountAll(dir string) error {
	points, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
