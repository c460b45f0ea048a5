package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FileStore keeps certificate pairs in Dir as upstream's kubelet and
// kubeadm lay them out: each pair in <prefix>-<timestamp>.pem (certificate
// and key in one file, mode 0600), and <prefix>-current.pem a symlink to
// the newest. The symlink is replaced atomically, so a reader sees the old
// pair or the new one, never a mix.
type FileStore struct {
	Dir    string
	Prefix string
}

// pairTimeLayout is upstream's timestamp in pair file names.
const pairTimeLayout = "2006-01-02-15-04-05"

// PairFileName is the file a pair issued at t is stored in.
func PairFileName(prefix string, t time.Time) string {
	return prefix + "-" + t.Format(pairTimeLayout) + ".pem"
}

// CurrentPath is the path of the current pair (the symlink).
func (s FileStore) CurrentPath() string {
	return filepath.Join(s.Dir, s.Prefix+"-current.pem")
}

// Current loads the current pair, with its Leaf; fs.ErrNotExist when there
// is none yet.
func (s FileStore) Current() (*tls.Certificate, error) {
	p := s.CurrentPath()
	c, err := tls.LoadX509KeyPair(p, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("loading %s: %w", p, err)
	}
	return &c, nil
}

// Update stores a new pair issued at now and makes it current.
func (s FileStore) Update(certPEM, keyPEM []byte, now time.Time) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate and key do not form a pair: %w", err)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	path := filepath.Join(s.Dir, PairFileName(s.Prefix, now))
	data := append(append(append([]byte{}, certPEM...), '\n'), keyPEM...)
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return nil, err
	}
	// A new symlink beside the old one, renamed over it.
	tmp := filepath.Join(s.Dir, s.Prefix+"-updated.pem")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removing %s: %w", tmp, err)
	}
	if err := os.Symlink(path, tmp); err != nil {
		return nil, fmt.Errorf("linking %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, s.CurrentPath()); err != nil {
		return nil, fmt.Errorf("making %s current: %w", path, err)
	}
	return &c, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if err := f.Chmod(mode); werr == nil {
		werr = err
	}
	if err := f.Sync(); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
