//go:build linux

package overlay

import (
	"slices"

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
