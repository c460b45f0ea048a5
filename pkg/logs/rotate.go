package logs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Runtime is what rotation needs from the container runtime;
// *cri.Client implements it.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatus, error)
	ReopenContainerLog(ctx context.Context, id string) error
}

// Rotation results passed to RotatorConfig.Observe.
const (
	RotationDone   = "rotated"
	RotationFailed = "failed"
)

// RotatorConfig configures a Rotator.
type RotatorConfig struct {
	Runtime Runtime
	// MaxSize is --container-log-max-size in bytes: a log at least this
	// big is rotated.
	MaxSize int64
	// MaxFiles is --container-log-max-files: the current file plus the
	// rotated ones a container keeps. At least 2.
	MaxFiles int
	// Interval between checks; 10 s when zero, as upstream's
	// containerLogMonitorInterval.
	Interval time.Duration
	// Now stamps rotated files; time.Now when nil.
	Now func() time.Time
	// Observe, when set, is told the result of every rotation attempt.
	Observe func(result string)
}

// Rotator keeps running containers' logs within MaxSize × MaxFiles.
type Rotator struct {
	cfg RotatorConfig

	// logPaths caches each running container's log path: it never changes
	// for a container, and asking the runtime for every container's status
	// every interval was most of an idle node's rotation cost. Only Run's
	// goroutine (RotateAll) touches it.
	logPaths map[string]string
}

// rotatedSuffix stamps a rotated file. Microseconds keep names unique and
// lexical order chronological; UTC keeps them stable across zone changes.
const rotatedSuffix = "20060102-150405.000000"

// NewRotator checks cfg and returns a Rotator.
func NewRotator(cfg RotatorConfig) (*Rotator, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("log rotation: no runtime")
	}
	if cfg.MaxSize <= 0 {
		return nil, fmt.Errorf("log rotation: max size %d must be positive", cfg.MaxSize)
	}
	if cfg.MaxFiles < 2 {
		return nil, fmt.Errorf("log rotation: max files %d must be at least 2", cfg.MaxFiles)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Rotator{cfg: cfg}, nil
}

// Run checks every interval until ctx ends.
func (r *Rotator) Run(ctx context.Context) error {
	_ = wait.PollUntilContextCancel(ctx, r.cfg.Interval, false, func(ctx context.Context) (bool, error) {
		if err := r.RotateAll(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Container log rotation")
		}
		return false, nil
	})
	return nil
}

// RotateAll checks the log of every running container once. A failure on
// one container does not stop the others; the errors are joined. Not safe
// for concurrent use.
func (r *Rotator) RotateAll(ctx context.Context) error {
	// The full list, filtered here: the runtime client keeps the full
	// list's entries decoded from the relist a moment ago, where a filtered
	// list would be decoded anew every time.
	ctrs, err := r.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	seen := make(map[string]string, len(ctrs))
	var errs []error
	for _, c := range ctrs {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		path, known := r.logPaths[c.Id]
		if !known {
			st, err := r.cfg.Runtime.ContainerStatus(ctx, c.Id, false)
			if err != nil {
				// Gone since the list: nothing to rotate.
				klog.V(4).InfoS("Skipping log rotation", "containerID", c.Id, "err", err)
				continue
			}
			if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue
			}
			path = st.LogPath
		}
		seen[c.Id] = path
		if path == "" {
			continue
		}
		// Rotated files beyond MaxFiles (left by a larger setting or an
		// earlier nodelet) are looked for once per container; after that
		// only a rotation adds files.
		if err := r.rotate(ctx, c.Id, path, !known); err != nil {
			errs = append(errs, err)
		}
	}
	r.logPaths = seen
	return errors.Join(errs...)
}

// rotate moves the log at path aside if it is too big and has the runtime
// reopen it, keeping at most MaxFiles files in all.
func (r *Rotator) rotate(ctx context.Context, id, path string, prune bool) error {
	st, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			// Moved aside by an earlier attempt whose reopen failed in a
			// way we could not undo; ask again.
			return r.reopen(ctx, id, path, "")
		}
		return fmt.Errorf("log of container %s: %w", id, err)
	}
	keep := r.cfg.MaxFiles - 1 // rotated files next to the current one
	big := st.Size() >= r.cfg.MaxSize
	if !big && !prune {
		return nil
	}
	if big {
		keep-- // room for the one about to be made
	}
	if err := removeOldest(path, keep); err != nil {
		return fmt.Errorf("log of container %s: %w", id, err)
	}
	if !big {
		return nil
	}
	dest := path + "." + r.cfg.Now().UTC().Format(rotatedSuffix)
	if err := os.Rename(path, dest); err != nil {
		r.observe(RotationFailed)
		return fmt.Errorf("rotate log of container %s: %w", id, err)
	}
	return r.reopen(ctx, id, path, dest)
}

// reopen asks the runtime to open a new file at path. If it cannot, the
// moved file goes back, so the runtime keeps writing to the file readers
// find at path.
func (r *Rotator) reopen(ctx context.Context, id, path, moved string) error {
	if err := r.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
		r.observe(RotationFailed)
		if moved != "" {
			if _, statErr := os.Stat(path); os.IsNotExist(statErr) {
				if rerr := os.Rename(moved, path); rerr != nil {
					err = errors.Join(err, fmt.Errorf("moving %s back: %w", moved, rerr))
				}
			}
		}
		return fmt.Errorf("rotate log of container %s: %w", id, err)
	}
	r.observe(RotationDone)
	klog.V(3).InfoS("Rotated container log", "containerID", id, "path", path, "rotated", moved)
	return nil
}

func (r *Rotator) observe(result string) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(result)
	}
}

// RotatedFiles returns the rotated files of the log at path, oldest first.
func RotatedFiles(path string) ([]string, error) {
	files, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// removeOldest deletes rotated files of path beyond the newest keep.
func removeOldest(path string, keep int) error {
	files, err := RotatedFiles(path)
	if err != nil {
		return err
	}
	var errs []error
	for len(files) > max(keep, 0) {
		if err := os.Remove(files[0]); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		files = files[1:]
	}
	return errors.Join(errs...)
}

// globEscape quotes the glob metacharacters a path may contain (pod names
// cannot, but a configured log directory might).
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
