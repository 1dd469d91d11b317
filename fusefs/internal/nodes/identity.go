//go:build linux

package nodes

import (
	"io/fs"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// Identity: what go-fuse tells nodes apart by (inode number, type and
// generation), taken from the engine's infos.

// Ino is the inode number the kernel gets for fi's object.
func Ino(fi fs.FileInfo) uint64 {
	a, ok := fi.Sys().(*overlay.Attr)
	if !ok {
		return 0
	}
	if a.Ino == ^uint64(0) { // reserved by go-fuse
		return a.Ino - 1
	}
	return a.Ino
}

// Type is the S_IFMT bits of m.
func Type(m fs.FileMode) uint32 { return beneath.UnixMode(m) & syscall.S_IFMT }

// Stable is the identity of fi's object for go-fuse.
func (t *Table[N]) Stable(fi fs.FileInfo) gofs.StableAttr {
	ino := Ino(fi)
	return gofs.StableAttr{Mode: Type(fi.Mode()), Ino: ino, Gen: t.Gen(ino)}
}

// Renumbered says whether a directory with number was, now ino, is
// the view's same directory renumbered: one the draft made that a
// commit gave the disk's number, or one the draft took back from the
// disk (an undo, a disk directory removed under draft files). In the
// view it never went; its node serves it by its path with its old
// number. A disk directory replaced by another on disk is not.
func Renumbered(was, ino uint64) bool {
	return overlay.DraftIno(was) != overlay.DraftIno(ino)
}

// RenumberedChild is parent's child name when it serves the directory
// now numbered ino, renumbered: lookups and listings keep it, as a new
// node would make the kernel drop the entry the invalidation kept (see
// package invalidate).
func RenumberedChild(parent *gofs.Inode, name string, ino uint64) *gofs.Inode {
	c := parent.GetChild(name)
	if c == nil || !c.IsDir() || !Renumbered(c.StableAttr().Ino, ino) {
		return nil
	}
	return c
}
