//go:build linux

package vfstest

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

// OS is the FS of the directory root through the os package: for a
// mount point, the mount as programs see it.
func OS(root string) FS {
	return osFS{Fs: afero.NewBasePathFs(afero.NewOsFs(), root), root: root}
}

type osFS struct {
	afero.Fs
	root string
}

func (o osFS) path(name string) string { return filepath.Join(o.root, filepath.FromSlash(name)) }

func (o osFS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(o.path(name)) }
func (o osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(o.path(name)) }
func (o osFS) Readlink(name string) (string, error)       { return os.Readlink(o.path(name)) }
func (o osFS) Symlink(target, newname string) error       { return os.Symlink(target, o.path(newname)) }
func (o osFS) Link(oldname, newname string) error         { return os.Link(o.path(oldname), o.path(newname)) }
func (o osFS) Truncate(name string, size int64) error     { return os.Truncate(o.path(name), size) }

// Rename is rename(2), which os.Rename is not: it refuses a directory
// as the target with EEXIST where rename(2) replaces an empty one.
func (o osFS) Rename(oldname, newname string) error { return o.Rename2(oldname, newname, 0) }

func (o osFS) Rename2(oldname, newname string, flags overlay.RenameFlags) error {
	var uflags uint
	if flags&overlay.RenameNoReplace != 0 {
		uflags |= unix.RENAME_NOREPLACE
	}
	if flags&overlay.RenameExchange != 0 {
		uflags |= unix.RENAME_EXCHANGE
	}
	if err := unix.Renameat2(unix.AT_FDCWD, o.path(oldname), unix.AT_FDCWD, o.path(newname), uflags); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (o osFS) Rmdir(name string) error {
	if err := unix.Rmdir(o.path(name)); err != nil {
		return &fs.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

func (o osFS) Unlink(name string) error {
	if err := unix.Unlink(o.path(name)); err != nil {
		return &fs.PathError{Op: "unlink", Path: name, Err: err}
	}
	return nil
}
