//go:build linux

package beneath

import (
	"os"
	"time"

	"github.com/spf13/afero"
)

// FS is an [afero.Fs] whose names are taken from a Root ("/a/b" is a/b
// beneath it). Unlike afero's BasePathFs it resolves every name in the
// kernel, beneath the root, and follows no symlink except in Stat (and
// there only to something beneath the root); Chtimes and Chown leave a
// final symlink itself alone.
type FS struct{ R *Root }

var (
	_ afero.Fs         = FS{}
	_ afero.Lstater    = FS{}
	_ afero.Linker     = FS{}
	_ afero.LinkReader = FS{}
)

// Name implements afero.Fs.
func (f FS) Name() string { return "beneath" }

// Create implements afero.Fs.
func (f FS) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open implements afero.Fs.
func (f FS) Open(name string) (afero.File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile implements afero.Fs.
func (f FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	file, err := f.R.Open(Key(name), flag, perm)
	if err != nil {
		return nil, err // not a nil *os.File in an interface
	}
	return file, nil
}

// Mkdir implements afero.Fs.
func (f FS) Mkdir(name string, perm os.FileMode) error { return f.R.Mkdir(Key(name), perm) }

// MkdirAll implements afero.Fs.
func (f FS) MkdirAll(name string, perm os.FileMode) error { return f.R.MkdirAll(Key(name), perm) }

// Remove implements afero.Fs.
func (f FS) Remove(name string) error { return f.R.Remove(Key(name)) }

// RemoveAll implements afero.Fs.
func (f FS) RemoveAll(name string) error { return f.R.RemoveAll(Key(name)) }

// Rename implements afero.Fs.
func (f FS) Rename(from, to string) error { return f.R.Rename(Key(from), Key(to)) }

// Stat implements afero.Fs.
func (f FS) Stat(name string) (os.FileInfo, error) { return f.R.Stat(Key(name)) }

// LstatIfPossible implements afero.Lstater.
func (f FS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := f.R.Lstat(Key(name))
	return fi, true, err
}

// Chmod implements afero.Fs.
func (f FS) Chmod(name string, mode os.FileMode) error { return f.R.Chmod(Key(name), mode) }

// Chown implements afero.Fs.
func (f FS) Chown(name string, uid, gid int) error { return f.R.Lchown(Key(name), uid, gid) }

// Chtimes implements afero.Fs.
func (f FS) Chtimes(name string, atime, mtime time.Time) error {
	return f.R.Lchtimes(Key(name), atime, mtime)
}

// SymlinkIfPossible implements afero.Linker; the target is kept as given.
func (f FS) SymlinkIfPossible(target, name string) error { return f.R.Symlink(target, Key(name)) }

// ReadlinkIfPossible implements afero.LinkReader.
func (f FS) ReadlinkIfPossible(name string) (string, error) { return f.R.Readlink(Key(name)) }
