//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/afero"
)

// OpenOn opens a workspace whose disk layer is disk instead of the OS
// file system at opts.Root: for tests of a layer without inode numbers
// or symlinks.
func OpenOn(opts Options, disk afero.Fs) (*Workspace, error) { return open(opts, disk) }

// DataFile is the path of the data file behind key in v's draft, "" when
// the draft holds no inode at key.
func DataFile(v *Fs, key string) string {
	d := v.d
	d.mu.RLock()
	defer d.mu.RUnlock()
	e := d.entries[key]
	if e == nil || e.Ino == 0 {
		return ""
	}
	return d.dataPath(d.dataOf(e.Ino))
}

// IsSpare reports whether name is one of d's spare data files (which
// may still hold a small file's content: see smallSpare).
func IsSpare(d *Draft, name string) bool {
	f, ok := parseFileName(name)
	if !ok || d.spare == nil {
		return false
	}
	d.spare.mu.Lock()
	defer d.spare.mu.Unlock()
	return slices.Contains(d.spare.files, f)
}

// RecordedCtime is the ctime the store of v's draft records for key's
// inode now, as a daemon killed now would find it: read from a copy of
// the draft's database and write-ahead log in dir.
func RecordedCtime(v *Fs, key, dir string) (time.Time, error) {
	d := v.d
	d.mu.RLock()
	e := d.entries[key]
	d.mu.RUnlock()
	if e == nil || e.Ino == 0 {
		return time.Time{}, fmt.Errorf("%s: no draft inode", key)
	}
	for _, name := range []string{"draft.db", "draft.wal"} {
		b, err := os.ReadFile(filepath.Join(d.dir, name))
		if err != nil {
			return time.Time{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return time.Time{}, err
		}
	}
	s, err := openStore(dir, false)
	if err != nil {
		return time.Time{}, err
	}
	defer s.close()
	snap, err := s.load()
	if err != nil {
		return time.Time{}, err
	}
	n := snap.inodes[e.Ino]
	if n == nil {
		return time.Time{}, fmt.Errorf("%s: inode %d not recorded", key, e.Ino)
	}
	return time.Unix(0, n.Ctime), nil
}
