//go:build linux

package nodes

import (
	"context"
	"io/fs"
	"path"
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

// Listed reports whether parent's node under name is already the one
// for fi's object, with its newest link there: the kernel's entry for
// name, if it has one, leads to that node, so a listing that describes
// its entries (READDIRPLUS) can leave this one undescribed.
func (t *Table[N]) Listed(parent *gofs.Inode, name string, fi fs.FileInfo) bool {
	c := parent.GetChild(name)
	if c == nil || c.StableAttr() != t.Stable(fi) || c.Operations().(N).Dropped() {
		return false
	}
	cname, cparent := c.Parent()
	return cparent == parent && cname == name
}

// Named returns the node whose name n's path is, n or one that took it,
// with that path; false when the node has no name any more (unlinked
// while open). A node whose name a lookup gave to another node of its
// type (the path's object got a new inode number from a commit, or a
// fresh node from Replace) follows that one, so descriptors open on it
// keep working.
func (t *Table[N]) Named(n N) (N, string, bool) {
	if key, ok := Path(n.EmbeddedInode()); ok {
		return n, key, true
	}
	if n.Slot().Holds() || n.Slot().Gone() != nil {
		var none N
		return none, "", false // its last name went through the mount
	}
	return t.Successor(n)
}

// Child returns the node for fi, found at key below parent: the node
// recorded for its identity (inode number, type and generation) while
// go-fuse keeps it, else one made by mk. The object gets a fresh node
// (a new generation) when the node it has is only known under a name
// that no longer names it (moved elsewhere by the engine, as lstat
// tells): that name may still be in the kernel's cache, and opens
// through it must not reach the object. With retry (the retry of an open
// answered ESTALE) it gets a fresh node too. A directory a commit or
// an undo renumbered keeps its node (see Renumbered).
func (t *Table[N]) Child(ctx context.Context, parent *gofs.Inode, key string, fi fs.FileInfo, retry bool, lstat func(string) (fs.FileInfo, error), mk func() N) *gofs.Inode {
	ino := Ino(fi)
	if fi.IsDir() {
		if c := RenumberedChild(parent, path.Base(key), ino); c != nil {
			return c
		}
	}
	known, ok := t.Known(ino, retry)
	if ok && !known.Dropped() && known.StableAttr().Gen == t.Gen(ino) {
		_, kkey, ok := t.Named(known)
		switch {
		case !ok && known.Slot().Holds():
			// Its object was unlinked through the mount: the disk gave
			// the inode number to another file since (a commit writes
			// new files), which must not read or write the pinned one.
			t.Replace(known.StableAttr())
		case ok && kkey != key:
			if kfi, err := lstat(kkey); err != nil || Ino(kfi) != ino {
				t.Replace(known.StableAttr())
			}
		}
	}
	sa := t.Stable(fi)
	_, name := Split(key)
	old := parent.GetChild(name)
	// The node recorded for the identity, if live, is the one go-fuse
	// keeps: a node made beside it would be discarded. Two lookups of a
	// new object served at once (two hard links' names) take the node
	// the first made, so that the one recorded is the one go-fuse
	// registers, whichever registers first. The kernel forgets no node
	// meanwhile (see package fusefs, Locking).
	var in *gofs.Inode
	if k, ok := t.Live(sa); ok {
		in = k.EmbeddedInode()
	} else {
		in = parent.NewInode(ctx, mk(), sa)
	}
	// Recorded once go-fuse set it up: others read its identity.
	n := in.Operations().(N)
	n.SetKey(key)
	var o N
	took := old != nil && old != in && old.StableAttr().Mode == sa.Mode
	if took {
		o = old.Operations().(N)
	}
	t.Added(n, sa, o, took)
	if old != nil && old.StableAttr() != sa {
		// go-fuse will put in under name without taking the name from
		// old (it keeps old only for old's identity): old would keep
		// its link to parent, and Path, which follows a node's newest
		// link only, would find old nameless, or lead it to another
		// object, while old has a name elsewhere (a hard link). Put in
		// there now, as go-fuse will, with old's link gone: no moment
		// without a node under name, for a request on whatever node
		// is there meanwhile (a create's), which go-fuse replaces too.
		parent.AddChild(name, in, true)
	}
	return in
}
