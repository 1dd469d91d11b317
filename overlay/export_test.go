//go:build linux

package overlay

import "github.com/spf13/afero"

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
