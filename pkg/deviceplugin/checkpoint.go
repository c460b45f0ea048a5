package deviceplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// CheckpointFile is the name of the allocation checkpoint in the
// device-plugins dir.
const CheckpointFile = "nodelet_device_checkpoint.json"

const checkpointVersion = 1

// Allocation is the devices of one resource held by one container.
type Allocation struct {
	PodUID    types.UID `json:"podUID"`
	Container string    `json:"container"`
	Resource  string    `json:"resource"`
	Devices   []string  `json:"devices"`
}

type checkpoint struct {
	Version     int          `json:"version"`
	Allocations []Allocation `json:"allocations"`
}

// readCheckpoint loads the allocations; a missing file is none. A file
// that does not parse is an error: starting with no allocations would
// double-assign devices held by running containers.
func readCheckpoint(path string) ([]Allocation, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read device checkpoint: %w", err)
	}
	var c checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("device checkpoint %s: %w", path, err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("device checkpoint %s: version %d, nodelet reads %d", path, c.Version, checkpointVersion)
	}
	return c.Allocations, nil
}

// writeCheckpoint replaces the checkpoint atomically: a temp file in the
// same dir, synced, then renamed over it.
func writeCheckpoint(path string, allocs []Allocation) error {
	b, err := json.Marshal(checkpoint{Version: checkpointVersion, Allocations: allocs})
	if err != nil {
		return fmt.Errorf("encode device checkpoint: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".checkpoint-*")
	if err != nil {
		return fmt.Errorf("write device checkpoint: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write device checkpoint: %w", err)
	}
	return nil
}
