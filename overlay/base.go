//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxKeptBase is the largest base content kept for 3-way merges; a larger
// file changed on both sides is a conflict.
const maxKeptBase = 64 << 20

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// blobPath is where a kept content with the given hash lives.
func (d *Draft) blobPath(hash string) string {
	return filepath.Join(d.dir, "blobs", hash)
}

// keepBlob stores content under its hash, once.
func (d *Draft) keepBlob(hash string, content []byte) error {
	p := d.blobPath(hash)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return writeFileAtomic(p, content, 0o600)
}

// readBlob returns kept content.
func (d *Draft) readBlob(hash string) ([]byte, error) {
	b, err := os.ReadFile(d.blobPath(hash))
	if err != nil {
		return nil, fmt.Errorf("overlay: draft %s: kept content %s: %w: %w", d.name, hash, ErrCorrupt, err)
	}
	return b, nil
}

// writeFileAtomic writes a state file so that it is whole or absent.
func writeFileAtomic(p string, content []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// recordBase describes what the lower layers hold at lowerPath now, and
// keeps the content of a file for merging. Must be called with d.mu
// held for writing (it reads the lower layers, not the draft).
func (d *Draft) recordBase(lowerPath string, ok bool) (*base, error) {
	b := &base{Path: lowerPath}
	if !ok {
		b.NoLower = true
		return b, nil
	}
	fi, err := d.lowerStat(baseOf(lowerPath), lowerPath)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	b.Exists, b.Kind, b.Mode, b.Size = true, kindOf(fi.Mode()), fi.Mode(), fi.Size()
	b.Mtime = fi.ModTime().UnixNano()
	b.Rdev = fi.attr.Rdev
	switch b.Kind {
	case kindSymlink:
		t, err := d.readlinkLower(lowerPath)
		if err != nil {
			return nil, err
		}
		b.Hash = hashBytes([]byte(t))
	case kindFile:
		if fi.Size() > maxKeptBase {
			r, _, err := d.openLower(lowerPath)
			if err != nil {
				return nil, err
			}
			h := sha256.New()
			_, err = io.Copy(h, r)
			r.Close()
			if err != nil {
				return nil, err
			}
			b.Hash = hex.EncodeToString(h.Sum(nil))
			return b, nil
		}
		content, version, err := d.readLower(lowerPath)
		if err != nil {
			return nil, err
		}
		b.Hash, b.Version, b.Size = hashBytes(content), version, int64(len(content))
		if version != 0 {
			b.Mtime = 0
		}
		if err := d.keepBlob(b.Hash, content); err != nil {
			return nil, fmt.Errorf("overlay: keep base of %q: %w", lowerPath, err)
		}
		b.Kept = true
	}
	return b, nil
}

// baseFor returns the base a new or changed entry at key carries: the
// existing entry's, else the lower state at key. Must be called with
// d.mu held for writing.
func (d *Draft) baseFor(key string) (*base, error) {
	if e, ok := d.entries[key]; ok && e.Base != nil {
		return e.Base, nil
	}
	lp, ok := d.lowerPathOf(key)
	return d.recordBase(lp, ok)
}
