//go:build linux

// Package vfstest is one behaviour suite for draftfs's merged view, run
// on any file system that shows a workspace's draft: the engine's view
// (*overlay.Fs) and the FUSE mount (OS over the mount point), as
// rclone's vfstest runs one suite on its VFS and on its mounts.
//
// Each case gets a fresh workspace holding its tree, acts through the
// view and checks what POSIX tools rely on; unless the case changes the
// disk itself, the workspace on disk must be untouched.
package vfstest

import (
	"io/fs"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// FS is the merged view: afero.Fs and the calls of the suite that afero
// lacks. *overlay.Fs is one; OS makes one of a directory.
type FS interface {
	afero.Fs
	Lstat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Readlink(name string) (string, error)
	Symlink(target, newname string) error
	Link(oldname, newname string) error
	Truncate(name string, size int64) error
	Rename2(oldname, newname string, flags overlay.RenameFlags) error
	Rmdir(name string) error
	Unlink(name string) error
}

// Env is a fresh workspace holding a case's tree, seen through a view.
type Env interface {
	// FS is the view; names are relative to the workspace's root.
	FS() FS
	// Root is the directory absolute symlinks name to point into the
	// view: the workspace for the engine, the mount point for a mount.
	Root() string
	// Disk is the path of key in the workspace on disk.
	Disk(key string) string
	// Reopen stops the view and the engine and starts them again from
	// the state directory, as a restarted daemon does.
	Reopen()
}

// Buffered is an Env whose workspace has editor buffers. Settle waits
// until the view shows the buffers' last change, as the daemon does
// before it answers an editor (a mount drops what the kernel cached a
// moment after the change); false if that took over a minute.
type Buffered interface {
	Buffers() *buffers.Set
	Settle() bool
}

// Resolver is an Env that maps paths to keys itself and refuses those
// that leave the workspace (the engine; through a mount, the kernel
// resolves paths and a symlink may lead anywhere).
type Resolver interface {
	Resolve(p string) (string, error)
}

// Lagging is an Env that shows a change made on disk only after a
// while: a mount, where the daemon learns of it by file watching and
// then drops the kernel's caches (the README's disk-to-mount window).
type Lagging interface {
	// DiskLag bounds the wait: a watchdog, not a timing.
	DiskLag() time.Duration
}

// Pinning is an Env where a handle opened read-only keeps reading the
// file it opened when the path's content moves to another file (a first
// write copying it into the draft, an editor buffer shadowing it): a
// mount in passthrough mode, as on a local disk whose file was replaced
// by a rename (README, "The mount's two modes"). Such an Env is not
// asked what a handle opened before such a change reads.
type Pinning interface {
	PinsOpenFiles() bool
}

// pins reports whether e is a Pinning Env that pins.
func pins(e Env) bool {
	p, ok := e.(Pinning)
	return ok && p.PinsOpenFiles()
}

// Case is one behaviour, checked on a fresh workspace holding Tree
// (see WriteTree).
type Case struct {
	Name string
	Tree map[string]string
	// DiskChanges: the case changes the disk itself.
	DiskChanges bool
	Run         func(t *testing.T, e Env)
}

// cases are the behaviours Run checks.
var cases = append(slices.Clone(nameCases), fileCases...)

// Run runs every case on an Env that newEnv makes holding the
// case's tree.
func Run(t *testing.T, newEnv func(t *testing.T, tree map[string]string) Env) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			e := newEnv(t, c.Tree)
			before := DiskSnapshot(t, e.Disk(""))
			c.Run(t, e)
			if !c.DiskChanges {
				CheckSnapshot(t, e.Disk(""), before)
			}
		})
	}
}

// Ino and Nlink read an info of either view: the engine's Attr, or the
// kernel's Stat_t through a mount.
func Ino(t testing.TB, fi fs.FileInfo) uint64 {
	t.Helper()
	switch s := fi.Sys().(type) {
	case *overlay.Attr:
		return s.Ino
	case *syscall.Stat_t:
		return s.Ino
	}
	t.Fatalf("%s: Sys() is %T, neither *overlay.Attr nor *syscall.Stat_t", fi.Name(), fi.Sys())
	return 0
}

// Nlink is the link count of fi, read as Ino reads the inode number.
func Nlink(t testing.TB, fi fs.FileInfo) uint64 {
	t.Helper()
	switch s := fi.Sys().(type) {
	case *overlay.Attr:
		return uint64(s.Nlink)
	case *syscall.Stat_t:
		return s.Nlink
	}
	t.Fatalf("%s: Sys() is %T, neither *overlay.Attr nor *syscall.Stat_t", fi.Name(), fi.Sys())
	return 0
}

// diskIno is the inode number of p on disk.
func diskIno(t testing.TB, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	Must(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}
