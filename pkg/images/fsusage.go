package images

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// StatfsFunc returns the capacity and the bytes available to unprivileged
// writers of the filesystem holding path.
type StatfsFunc func(path string) (capacity, available uint64, err error)

// Statfs is the StatfsFunc of the real filesystem (statfs(2)).
func Statfs(path string) (capacity, available uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	return st.Blocks * bsize, st.Bavail * bsize, nil
}

// ImageFsUsage measures the image filesystem: the runtime names its
// mountpoint and the bytes images use (CRI ImageFsInfo); capacity and
// available space are the filesystem's own figures (statfs of that
// mountpoint). A nil statfs means Statfs.
func ImageFsUsage(ctx context.Context, rt ImageFsInfoer, statfs StatfsFunc) (FsUsage, error) {
	if statfs == nil {
		statfs = Statfs
	}
	resp, err := rt.ImageFsInfo(ctx)
	if err != nil {
		return FsUsage{}, fmt.Errorf("image filesystem usage: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return FsUsage{}, errors.New("image filesystem usage: the runtime reported no image filesystem")
	}
	// One image filesystem is what containerd and CRI-O report; should a
	// runtime report several, the first one is where images are written.
	fs := fss[0]
	mp := fs.GetFsId().GetMountpoint()
	if mp == "" {
		return FsUsage{}, errors.New("image filesystem usage: the runtime reported no mountpoint for its image filesystem")
	}
	capacity, available, err := statfs(mp)
	if err != nil {
		return FsUsage{}, fmt.Errorf("image filesystem usage: %w", err)
	}
	if capacity == 0 {
		return FsUsage{}, fmt.Errorf("image filesystem usage: invalid capacity 0 for %s", mp)
	}
	return FsUsage{
		Capacity:    capacity,
		Available:   min(available, capacity),
		ImagesBytes: fs.GetUsedBytes().GetValue(),
		Mountpoint:  mp,
	}, nil
}
